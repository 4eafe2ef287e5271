// Which Redis errors a wait retries (transient) and which end it (permanent):
// the one classification every Redis path uses (SPEC §7).
#include "lock/backoff.hpp"
#include "redis/error.hpp"

#include <netdb.h>

#include <gtest/gtest.h>

#include <cerrno>

using namespace bufferlock;
using namespace std::chrono_literals;
using K = RedisError::Kind;

TEST(RedisErrorClass, ServerRepliesOfAServerNotReadyYetAreTransient) {
  for (const char* text :
       {"LOADING Redis is loading the dataset in memory",
        "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.",
        "READONLY You can't write against a read only replica.",
        "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
        "TRYAGAIN Multiple keys request during rehashing of slot", "CLUSTERDOWN The cluster is down"})
    EXPECT_EQ(classify(K::server, text), Recovery::transient) << text;
}

TEST(RedisErrorClass, RefusedCredentialsDatabasesAndScriptsArePermanent) {
  for (const char* text :
       {"WRONGPASS invalid username-password pair or user is disabled.", "NOAUTH Authentication required.",
        "ERR invalid password", "ERR DB index is out of range",
        "NOPERM this user has no permissions to run the 'eval' command", "ERR unknown command 'EVALSHA'",
        "OOM command not allowed when used memory > 'maxmemory'.", "BUSYKEY Target key name already exists.",
        ""})
    EXPECT_EQ(classify(K::server, text), Recovery::permanent) << text;
}

TEST(RedisErrorClass, ConnectionFailuresAreTransientUnknownHostsAreNot) {
  EXPECT_EQ(classify(K::unreachable, ""), Recovery::transient);
  EXPECT_EQ(classify(K::dropped, ""), Recovery::transient);
  EXPECT_EQ(classify(K::timeout, ""), Recovery::transient);
  EXPECT_EQ(classify(K::unknown_host, ""), Recovery::permanent);
  EXPECT_EQ(classify(K::denied, ""), Recovery::permanent);
  EXPECT_EQ(classify(K::protocol, ""), Recovery::permanent);
}

TEST(RedisErrorClass, SocketErrors) {
  EXPECT_EQ(connect_error(ECONNREFUSED).kind, K::unreachable);
  EXPECT_EQ(connect_error(ECONNREFUSED).text, "Connection refused");
  EXPECT_TRUE(connect_error(ECONNREFUSED).transient());
  EXPECT_EQ(connect_error(ENOENT).kind, K::unreachable); // a unix socket not there yet
  EXPECT_EQ(connect_error(ETIMEDOUT).kind, K::timeout);
  EXPECT_EQ(connect_error(EACCES).kind, K::denied);
  EXPECT_FALSE(connect_error(EACCES).transient());
  EXPECT_EQ(io_error(EAGAIN).kind, K::timeout);
  EXPECT_EQ(io_error(0).kind, K::dropped);
  EXPECT_EQ(io_error(ECONNRESET).kind, K::dropped);
  EXPECT_TRUE(io_error(EPIPE).transient());
}

TEST(RedisErrorClass, ResolverErrors) {
  const RedisError noname = resolve_error(EAI_NONAME);
  EXPECT_EQ(noname.kind, K::unknown_host);
  EXPECT_FALSE(noname.transient());
  EXPECT_EQ(noname.text, gai_strerror(EAI_NONAME));
  // A resolver that cannot be asked now may answer later.
  EXPECT_TRUE(resolve_error(EAI_AGAIN).transient());
}

TEST(RedisErrorClass, TlsFailuresAndProtocolErrorsArePermanent) {
  EXPECT_FALSE(redis_error(K::tls, "certificate verify failed").transient());
  EXPECT_FALSE(redis_error(K::protocol, "Protocol error, got \"H\" as reply type byte").transient());
}

TEST(PollUntil, APermanentErrorEndsEvenAnInfiniteWaitAtOnce) {
  int calls = 0;
  const Outcome o = poll_until(
      infinite_duration, OnError::retry, Backoff(1ms, 2.0, 4ms),
      [&] {
        ++calls;
        return Outcome::failed("WRONGPASS", Recovery::permanent);
      },
      [](Nanos) {});
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(o.status, AcquireStatus::error);
}

TEST(PollUntil, AnInfiniteWaitRetriesTransientErrors) {
  int calls = 0;
  const Outcome o = poll_until(
      infinite_duration, OnError::retry, Backoff(1ms, 2.0, 4ms),
      [&] { return ++calls < 5 ? Outcome::failed("refused", Recovery::transient) : Outcome::acquired(); },
      [](Nanos) {});
  EXPECT_EQ(calls, 5);
  EXPECT_EQ(o.status, AcquireStatus::acquired);
}

TEST(PollUntil, OnErrorStopEndsAtTheFirstError) {
  int calls = 0;
  const Outcome o = poll_until(
      infinite_duration, OnError::stop, Backoff(1ms, 2.0, 4ms),
      [&] {
        ++calls;
        return calls == 1 ? Outcome::busy() : Outcome::failed("refused", Recovery::transient);
      },
      [](Nanos) {});
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(o.status, AcquireStatus::error);
}

TEST(RedisErrorClass, AclRefusalsArePermanentAndPointToTheRightsNeeded) {
  for (const char* text : {"NOPERM this user has no permissions to run the 'blpop' command",
                           "NOPERM this user has no permissions to access one of the keys used as arguments",
                           "ERR The user executing the script can't run this command or subcommand script: "
                           "5de3b8e9dee9b7127949938364aea780311ab1c9, on @user_script:1."}) {
    const RedisError e = redis_error(K::server, text);
    EXPECT_TRUE(is_acl_refusal(e)) << text;
    EXPECT_FALSE(e.transient()) << text;
    EXPECT_TRUE(e.text.starts_with(text)) << e.text;
    EXPECT_NE(e.text.find("SECURITY in bufferlock(1)"), std::string::npos) << e.text;
  }
  for (const char* text : {"WRONGPASS invalid username-password pair or user is disabled.",
                           "ERR This instance has cluster support disabled", "LOADING Redis is loading"}) {
    const RedisError e = redis_error(K::server, text);
    EXPECT_FALSE(is_acl_refusal(e)) << text;
    EXPECT_EQ(e.text, text);
  }
  EXPECT_FALSE(is_acl_refusal(redis_error(K::protocol, "NOPERM")));
}
