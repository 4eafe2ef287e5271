#include "cli.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

using namespace bufferlock;
using namespace std::chrono_literals;

namespace {

struct Env {
  std::map<std::string, std::string> vars;
  EnvLookup lookup() const {
    return [this](const char* name) -> const char* {
      auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  }
};

Options parse(std::vector<std::string> words, const Env& env = {}) {
  words.insert(words.begin(), "bufferlock");
  std::vector<const char*> argv;
  for (auto& w : words)
    argv.push_back(w.c_str());
  return parse_command_line(static_cast<int>(argv.size()), argv.data(), env.lookup());
}

std::string usage_error(std::vector<std::string> words, const Env& env = {}) {
  try {
    parse(std::move(words), env);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no error)";
}

using Words = std::vector<std::string>;

// A CA certificate that OpenSSL parses (self-signed, valid until 2126), in a
// file of the test's own: an https store checks its --tls-ca as it is parsed.
const std::string& test_ca_file() {
  static const std::string path = [] {
    char name[] = "/tmp/bufferlock-unit-ca-XXXXXX";
    const int fd = mkstemp(name);
    if (fd < 0) return std::string("/nonexistent");
    const std::string_view pem = "-----BEGIN CERTIFICATE-----\n"
                                 "MIIBmjCCAUGgAwIBAgIUJSN5Rg6cXT9qkIVv9Fm+h3ApjYwwCgYIKoZIzj0EAwIw\n"
                                 "IjEgMB4GA1UEAwwXYnVmZmVybG9jay11bml0LXRlc3QtY2EwIBcNMjYxMjA1MDAy\n"
                                 "OTQ2WhgPMjEyNjExMTEwMDI5NDZaMCIxIDAeBgNVBAMMF2J1ZmZlcmxvY2stdW5p\n"
                                 "dC10ZXN0LWNhMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE7mVDGjKjnmngeS2o\n"
                                 "k2eEsVgzFYheFTY3g1WYSZFWSOtVkDj7MH+CFPoBIrOhOB3J+sBurdVAiq/E5s8j\n"
                                 "27SkraNTMFEwHQYDVR0OBBYEFFJPA7C4Xpva6iq9ukh2TPABTX5TMB8GA1UdIwQY\n"
                                 "MBaAFFJPA7C4Xpva6iq9ukh2TPABTX5TMA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZI\n"
                                 "zj0EAwIDRwAwRAIgASi6c+rVr9t/OjepMVO5LQatI+YIHFKJtgngxM9UmhQCIAKc\n"
                                 "/XqRb8clw/2fE5akMrcuRrzB79CeDvHvM35U4hAu\n"
                                 "-----END CERTIFICATE-----\n";
    const bool written = write(fd, pem.data(), pem.size()) == static_cast<ssize_t>(pem.size());
    close(fd);
    return written ? std::string(name) : std::string("/nonexistent");
  }();
  static const int removed_at_exit = std::atexit([] { unlink(test_ca_file().c_str()); });
  (void)removed_at_exit;
  return path;
}

} // namespace

TEST(Cli, ImplicitFormTakesTheCommandVerbatim) {
  const Options o = parse({"-d", "D", "k", "ls", "-l", "--", "-x"});
  EXPECT_EQ(o.command, Command::run);
  EXPECT_EQ(o.backend, Backend::file);
  EXPECT_EQ(o.dir, "D");
  EXPECT_EQ(o.key, "k");
  EXPECT_EQ(o.argv, (Words{"ls", "-l", "--", "-x"}));
  EXPECT_EQ(o.wait, Nanos(0));
}

TEST(Cli, DashDashAfterKeyIsDropped) { EXPECT_EQ(parse({"k", "--", "-c", "x"}).argv, (Words{"-c", "x"})); }

TEST(Cli, ShellCommandAfterKeyOrBefore) {
  EXPECT_EQ(parse({"k", "-c", "echo hi"}).argv, (Words{"/bin/sh", "-c", "echo hi"}));
  EXPECT_EQ(parse({"k", "--command", "echo hi"}).argv, (Words{"/bin/sh", "-c", "echo hi"}));
  EXPECT_EQ(parse({"k", "--command=echo hi"}).argv, (Words{"/bin/sh", "-c", "echo hi"}));
  EXPECT_EQ(parse({"-c", "echo hi", "k"}).argv, (Words{"/bin/sh", "-c", "echo hi"}));
  EXPECT_NE(usage_error({"k", "-c", "a", "b"}).find("exactly one"), std::string::npos);
  EXPECT_NE(usage_error({"k", "-c"}).find("exactly one"), std::string::npos);
  EXPECT_NE(usage_error({"-c", "a", "k", "true"}).find("both"), std::string::npos);
}

TEST(Cli, DashDashBeforeKeyAllowsAnyKey) {
  const Options o = parse({"-d", "D", "--", "-odd-key", "--", "cmd"});
  EXPECT_EQ(o.key, "-odd-key");
  EXPECT_EQ(o.argv, (Words{"cmd"}));
  EXPECT_EQ(parse({"--", "cache", "true"}).key, "cache");
  EXPECT_EQ(parse({"--", "", "true"}).key, "");
  EXPECT_EQ(parse({"", "true"}).key, "");
}

TEST(Cli, SubcommandNameAsImplicitKeyIsAUsageError) {
  EXPECT_NE(usage_error({"-d", "D", "cache", "--", "true"}).find("bufferlock run cache"), std::string::npos);
  const Options o = parse({"run", "-d", "D", "cache", "--", "true"});
  EXPECT_EQ(o.key, "cache");
  EXPECT_EQ(o.command, Command::run);
}

TEST(Cli, ShortOptionClustersAndAttachedValues) {
  const Options o = parse({"-nvsw5", "-dDIR", "-E3", "k", "true"});
  EXPECT_TRUE(o.shared);
  EXPECT_EQ(o.verbosity, diag::Verbosity::verbose);
  EXPECT_EQ(o.wait, Nanos(5s));
  EXPECT_EQ(o.dir, "DIR");
  EXPECT_EQ(o.busy_exit, 3);
}

TEST(Cli, LongOptionsWithEqualsOrNextWord) {
  const Options o = parse({"--dir=D", "--wait", "250ms", "--conflict-exit-code=9", "--error-exit", "0",
                           "--fail-open", "--close", "--quiet", "k", "true"});
  EXPECT_EQ(o.dir, "D");
  EXPECT_EQ(o.wait, Nanos(250ms));
  EXPECT_EQ(o.busy_exit, 9);
  EXPECT_EQ(o.error_exit, 0);
  EXPECT_TRUE(o.fail_open);
  EXPECT_TRUE(o.close);
  EXPECT_EQ(o.verbosity, diag::Verbosity::quiet);
  EXPECT_EQ(parse({"--timeout", "inf", "k", "true"}).wait, infinite_duration);
}

TEST(Cli, LastOfNonblockAndWaitWins) {
  EXPECT_EQ(parse({"-w", "5", "-n", "k", "true"}).wait, Nanos(0));
  EXPECT_EQ(parse({"-n", "-w", "5", "k", "true"}).wait, Nanos(5s));
  EXPECT_EQ(parse({"-w", "0", "k", "true"}).wait, Nanos(0));
}

TEST(Cli, BadValuesAreUsageErrors) {
  for (const Words& w : std::vector<Words>{{"-w", "-1", "k", "true"},
                                           {"-w", "abc", "k", "true"},
                                           {"-w", "nan", "k", "true"},
                                           {"-w", "1e3", "k", "true"},
                                           {"-E", "256", "k", "true"},
                                           {"-E", "-1", "k", "true"},
                                           {"-E", "", "k", "true"},
                                           {"--error-exit", "x", "k", "true"},
                                           {"--dir", "", "k", "true"},
                                           {"--bogus", "k", "true"},
                                           {"-Z", "k", "true"},
                                           {"--close=yes", "k", "true"},
                                           {"--wait"},
                                           {"-w"},
                                           {"-o", "-F", "k", "true"}}) {
    EXPECT_NE(usage_error(w), "(no error)") << w[0];
  }
}

TEST(Cli, MissingKeyOrCommand) {
  EXPECT_EQ(usage_error({}), "missing KEY");
  EXPECT_EQ(usage_error({"-n"}), "missing KEY");
  EXPECT_EQ(usage_error({"k"}), "missing command after KEY");
  EXPECT_EQ(usage_error({"k", "--"}), "missing command after KEY");
}

TEST(Cli, HelpAndVersionWinOverMissingKey) {
  EXPECT_EQ(parse({"--help"}).command, Command::help);
  EXPECT_EQ(parse({"-h"}).command, Command::help);
  EXPECT_EQ(parse({"--version"}).command, Command::version);
  EXPECT_EQ(parse({"-V"}).command, Command::version);
}

TEST(Cli, BackendChoice) {
  EXPECT_NE(usage_error({"-d", "D", "-r", "redis://h", "k", "true"}).find("together"), std::string::npos);
  Env both{{{"BUFFERLOCK_DIR", "/a"}, {"BUFFERLOCK_REDIS", "redis://h"}}};
  EXPECT_NE(usage_error({"k", "true"}, both).find("BUFFERLOCK_DIR"), std::string::npos);
  EXPECT_EQ(parse({"-d", "D", "k", "true"}, both).dir, "D"); // an option decides
  Env dir_env{{{"BUFFERLOCK_DIR", "/a"}}};
  EXPECT_EQ(parse({"k", "true"}, dir_env).dir, "/a");
  EXPECT_EQ(parse({"-d", "/b", "k", "true"}, dir_env).dir, "/b");
  EXPECT_EQ(parse({"k", "true"}).dir, ""); // the default directory
  Env empty_env{{{"BUFFERLOCK_DIR", ""}}};
  EXPECT_EQ(parse({"k", "true"}, empty_env).dir, "");
}

TEST(Cli, RedisOptionsAreRefusedWithTheFileBackend) {
  EXPECT_NE(usage_error({"--ttl", "5", "k", "true"}).find("--ttl"), std::string::npos);
  EXPECT_NE(usage_error({"--hash-tag", "k", "true"}).find("--hash-tag"), std::string::npos);
  EXPECT_NE(usage_error({"-s", "-r", "redis://h", "k", "true"}).find("--shared"), std::string::npos);
  // The other backend's environment is not read at all.
  Env ttl_env{{{"BUFFERLOCK_TTL", "garbage"}}};
  EXPECT_EQ(parse({"k", "true"}, ttl_env).backend, Backend::file);
}

TEST(Cli, TtlMustRoundToAtLeastOneMillisecond) {
  EXPECT_EQ(parse({"-r", "redis://h", "--ttl", "0.0005", "k", "true"}).redis.ttl, Nanos(500us));
  for (const char* bad : {"0", "-1", "abc", "nan", "1e999", "0.0004"})
    EXPECT_NE(usage_error({"-r", "redis://h", "--ttl", bad, "k", "true"}), "(no error)") << bad;
}

TEST(Cli, WaitFromTheEnvironment) {
  Env wait_env{{{"BUFFERLOCK_WAIT", "2m"}}};
  EXPECT_EQ(parse({"k", "true"}, wait_env).wait, Nanos(120s));
  EXPECT_EQ(parse({"-n", "k", "true"}, wait_env).wait, Nanos(0));
  Env bad_wait{{{"BUFFERLOCK_WAIT", "soon"}}};
  EXPECT_NE(usage_error({"k", "true"}, bad_wait).find("BUFFERLOCK_WAIT"), std::string::npos);
}

TEST(Cli, StatusAndTheRedisOnlySubcommands) {
  const Options o = parse({"status", "-d", "D", "k"});
  EXPECT_EQ(o.command, Command::status);
  EXPECT_EQ(o.key, "k");
  EXPECT_NE(usage_error({"status", "k", "extra"}), "(no error)");
  EXPECT_NE(usage_error({"acquire", "k"}).find("redis"), std::string::npos);
  EXPECT_NE(usage_error({"release", "k", "tok"}).find("redis"), std::string::npos);
  EXPECT_NE(usage_error({"extend", "k", "tok"}).find("redis"), std::string::npos);
  EXPECT_EQ(parse({"release", "-r", "redis://h", "k", "tok"}).token, "tok");
}

TEST(Cli, RedisUrlPasswordAndEnvironment) {
  Env env{{{"BUFFERLOCK_REDIS", "redis://h:7000/2"},
           {"BUFFERLOCK_REDIS_PASSWORD", "from-env"},
           {"REDISCLI_AUTH", "from-cli"},
           {"BUFFERLOCK_TTL", "5"},
           {"BUFFERLOCK_NAMESPACE", "app:"}}};
  const Options o = parse({"k", "true"}, env);
  EXPECT_EQ(o.backend, Backend::redis);
  EXPECT_EQ(o.redis.url.port, 7000);
  EXPECT_EQ(o.redis.url.db, 2);
  EXPECT_EQ(o.redis.password, "from-env");
  EXPECT_EQ(o.redis.ttl, Nanos(5s));
  EXPECT_EQ(o.redis.key_prefix, "app:");
  EXPECT_EQ(parse({"--ttl", "7", "k", "true"}, env).redis.ttl, Nanos(7s)); // the option wins
  EXPECT_EQ(parse({"-r", "redis://:in-url@h", "k", "true"}, env).redis.password, "in-url");
  Env cli_only{{{"REDISCLI_AUTH", "from-cli"}}};
  EXPECT_EQ(parse({"-r", "redis://h", "k", "true"}, cli_only).redis.password, "from-cli");
  Env bad_ttl{{{"BUFFERLOCK_TTL", "0"}}};
  EXPECT_NE(usage_error({"-r", "redis://h", "k", "true"}, bad_ttl).find("BUFFERLOCK_TTL"), std::string::npos);
}

// How long an infinite wait retries a server that never answered (SPEC §7).
TEST(Cli, OutageAllowanceDefaultOptionEnvironment) {
  EXPECT_EQ(parse({"-r", "redis://h", "k", "true"}).redis.outage_allowance, Nanos(30s));
  EXPECT_EQ(parse({"-r", "redis://h", "--outage-allowance", "2.5", "k", "true"}).redis.outage_allowance,
            Nanos(2500ms));
  EXPECT_EQ(parse({"-r", "redis://h", "--outage-allowance", "inf", "k", "true"}).redis.outage_allowance,
            infinite_duration);
  Env env{{{"BUFFERLOCK_OUTAGE_ALLOWANCE", "5"}}};
  EXPECT_EQ(parse({"-r", "redis://h", "k", "true"}, env).redis.outage_allowance, Nanos(5s));
  EXPECT_EQ(parse({"-r", "redis://h", "--outage-allowance", "1", "k", "true"}, env).redis.outage_allowance,
            Nanos(1s));
  Env bad{{{"BUFFERLOCK_OUTAGE_ALLOWANCE", "soon"}}};
  EXPECT_NE(usage_error({"-r", "redis://h", "k", "true"}, bad).find("BUFFERLOCK_OUTAGE_ALLOWANCE"),
            std::string::npos);
  EXPECT_NE(usage_error({"-d", "/tmp", "--outage-allowance", "1", "k", "true"}).find("--outage-allowance"),
            std::string::npos);
}

TEST(Cli, RedisUrlErrorsNeverShowThePassword) {
  const std::string e = usage_error({"-r", "redis://u:hunter2@h:99999", "k", "true"});
  EXPECT_EQ(e.find("hunter2"), std::string::npos);
  EXPECT_NE(e.find("***"), std::string::npos);
  const std::string tls =
      usage_error({"-r", "rediss://u:hunter2@h", "--tls-ca", "/nonexistent/ca.pem", "k", "true"});
  EXPECT_NE(tls.find("/nonexistent/ca.pem"), std::string::npos);
  EXPECT_EQ(tls.find("hunter2"), std::string::npos);
}

TEST(Cli, TlsOptionsFitTheUrl) {
  EXPECT_EQ(usage_error({"-r", "redis://h", "--tls-ca", "ca.pem", "k", "true"}),
            "--tls-ca needs a rediss:// URL");
  EXPECT_EQ(usage_error({"-r", "rediss://h", "--tls-cert", "c.pem", "k", "true"}),
            "--tls-cert needs --tls-key");
  EXPECT_EQ(usage_error({"-r", "rediss://h", "--tls-key", "k.pem", "k", "true"}),
            "--tls-key needs --tls-cert");
  EXPECT_NE(usage_error({"--tls-ca", "ca.pem", "k", "true"}).find("is a redis option"), std::string::npos);
  // The variables are read for rediss:// only: set for a plain URL, they are ignored.
  Env env{{{"BUFFERLOCK_TLS_CA", "/nonexistent"}, {"BUFFERLOCK_TLS_CERT", "x"}}};
  EXPECT_TRUE(parse({"-r", "redis://h", "k", "true"}, env).redis.tls.ca.empty());
  EXPECT_EQ(usage_error({"-r", "rediss://h", "k", "true"}, env), "BUFFERLOCK_TLS_CERT needs --tls-key");
}

// Parsing reads no PEM: OpenSSL is loaded before the first connection
// (app.cpp), so a file that can be read passes here whatever it holds.
TEST(Cli, TlsFilesAreJudgedByOpenSslOnlyAfterParsing) {
  char name[] = "/tmp/bufferlock-unit-notpem-XXXXXX";
  const int fd = mkstemp(name);
  ASSERT_GE(fd, 0);
  ::close(fd);
  const Options o = parse({"-r", "rediss://h", "--tls-ca", name, "k", "true"});
  EXPECT_EQ(o.redis.tls.ca, name);
  EXPECT_EQ(parse({"cache", "--store", "https://h/x", "--tls-ca", name, "k", "true"}).cache.store_ca, name);
  ::unlink(name);
}

// Given the variables of ours that are set (found once in environ), the
// table's fallbacks read those alone, and read them as lookups would.
TEST(Cli, OurVariablesFoundOnceReadAsLookedUp) {
  const Env env{{{"BUFFERLOCK_WAIT", "5"}, {"BUFFERLOCK_DIR", "/x"}, {"BUFFERLOCK_WAITX", "7"}}};
  const std::vector<const char*> ours{"BUFFERLOCK_WAITX=7", "BUFFERLOCK_DIR=/x", "BUFFERLOCK_WAIT=5"};
  const char* argv[] = {"bufferlock", "k", "true"};
  const Options found = parse_command_line(3, argv, EnvLookup(env.lookup().get, &ours));
  EXPECT_EQ(found, parse({"k", "true"}, env));
  EXPECT_EQ(found.wait, 5s);
  EXPECT_EQ(found.dir, "/x");
  // A variable missing from `ours` is not asked for.
  const std::vector<const char*> none;
  EXPECT_EQ(parse_command_line(3, argv, EnvLookup(env.lookup().get, &none)).wait, 0s);
}

TEST(Cli, RedisTimingOptionsMustBePositive) {
  for (const char* opt : {"--connect-timeout", "--io-timeout", "--step", "--max-step"})
    EXPECT_NE(usage_error({"-r", "redis://h", opt, "0", "k", "true"}), "(no error)") << opt;
  for (const char* ratio : {"0.5", "x", "2s", "-2"})
    EXPECT_NE(usage_error({"-r", "redis://h", "--ratio", ratio, "k", "true"}), "(no error)") << ratio;
  EXPECT_EQ(parse({"-r", "redis://h", "--ratio", "1.5", "k", "true"}).redis.ratio, 1.5);
  EXPECT_NE(usage_error({"-r", "redis://h", "--on-lost", "panic", "k", "true"}), "(no error)");
  EXPECT_EQ(parse({"-r", "redis://h", "--on-lost", "term", "k", "true"}).redis.on_lost, OnLost::term);
}

// Which usage error (its message key), or nullopt when the words parse.
std::optional<Msg> usage_key(std::vector<std::string> words, const Env& env = {}) {
  try {
    parse(std::move(words), env);
  } catch (const UsageError& e) {
    return e.msg;
  }
  return std::nullopt;
}

std::vector<std::string> quorum_hosts(const Options& o) {
  std::vector<std::string> hosts;
  for (const auto& u : o.redis.quorum)
    hosts.push_back(u.host + ":" + std::to_string(u.port));
  return hosts;
}

TEST(CliQuorum, RedisGivenNTimesIsAQuorum) {
  const Options o = parse({"-r", "redis://a", "--redis", "redis://b:7001", "-rredis://c/2", "k", "true"});
  EXPECT_EQ(o.backend, Backend::redis);
  EXPECT_EQ(quorum_hosts(o), (std::vector<std::string>{"a:6379", "b:7001", "c:6379"}));
  EXPECT_EQ(o.redis.url.host, "a"); // the first names the lock in messages
  EXPECT_EQ(o.redis.quorum[2].db, 2);
  // One URL is the ordinary single-server lock, not a quorum of one.
  EXPECT_TRUE(parse({"-r", "redis://a", "k", "true"}).redis.quorum.empty());
}

TEST(CliQuorum, SeveralUrlsInTheEnvironmentWithOddSpacing) {
  for (const char* list : {"redis://a redis://b redis://c", "  redis://a   redis://b redis://c  ",
                           "redis://a\tredis://b\n redis://c\n"}) {
    const Env env{{{"BUFFERLOCK_REDIS", list}}};
    EXPECT_EQ(quorum_hosts(parse({"k", "true"}, env)),
              (std::vector<std::string>{"a:6379", "b:6379", "c:6379"}))
        << list;
  }
  const Env one{{{"BUFFERLOCK_REDIS", "  redis://a  "}}};
  EXPECT_EQ(parse({"k", "true"}, one).redis.url.host, "a");
  EXPECT_TRUE(parse({"k", "true"}, one).redis.quorum.empty());
  // Blanks only: no URL at all, so the file backend (as if unset).
  const Env blank{{{"BUFFERLOCK_REDIS", "   "}}};
  EXPECT_EQ(parse({"k", "true"}, blank).backend, Backend::file);
  // --redis on the command line replaces the whole list.
  const Env three{{{"BUFFERLOCK_REDIS", "redis://a redis://b redis://c"}}};
  EXPECT_TRUE(parse({"-r", "redis://d", "k", "true"}, three).redis.quorum.empty());
}

TEST(CliQuorum, TheSameServerTwiceIsAUsageError) {
  EXPECT_EQ(usage_key({"-r", "redis://a", "-r", "redis://b", "-r", "redis://a", "k", "true"}),
            Msg::usage_redis_twice);
  // The database or the password does not make it another server.
  EXPECT_EQ(usage_key({"-r", "redis://a:7000/1", "-r", "redis://:pw@a:7000/2", "k", "true"}),
            Msg::usage_redis_twice);
  EXPECT_EQ(usage_key({"-r", "unix:///s", "-r", "unix:///s?db=3", "k", "true"}), Msg::usage_redis_twice);
  EXPECT_EQ(usage_key({"k", "true"}, Env{{{"BUFFERLOCK_REDIS", "redis://a redis://a"}}}),
            Msg::usage_redis_twice);
  // Another port, or TCP vs TLS on another port, is another server.
  EXPECT_EQ(usage_key({"-r", "redis://a:7000", "-r", "redis://a:7001", "k", "true"}), std::nullopt);
}

TEST(CliQuorum, ASentinelUrlInAQuorumIsAUsageError) {
  EXPECT_EQ(usage_key({"-r", "redis://a", "-r", "redis-sentinel://s1,s2#mymaster", "k", "true"}),
            Msg::usage_quorum_sentinel);
  EXPECT_EQ(usage_key({"k", "true"}, Env{{{"BUFFERLOCK_REDIS", "redis-sentinel://s#m redis://a"}}}),
            Msg::usage_quorum_sentinel);
  // Alone, a sentinel URL is fine.
  EXPECT_EQ(usage_key({"-r", "redis-sentinel://s1,s2#mymaster", "k", "true"}), std::nullopt);
}

TEST(CliQuorum, ThePasswordFromTheEnvironmentGoesToEachUrlWithoutOne) {
  const Env env{{{"BUFFERLOCK_REDIS_PASSWORD", "env-pw"}}};
  const Options o = parse({"-r", "redis://a", "-r", "redis://:own@b", "-r", "redis://u@c", "k", "true"}, env);
  ASSERT_EQ(o.redis.quorum.size(), 3U);
  EXPECT_EQ(o.redis.quorum[0].password, "env-pw");
  EXPECT_EQ(o.redis.quorum[1].password, "own"); // the URL's own wins
  EXPECT_EQ(o.redis.quorum[2].password, "env-pw");
  const Env cli{{{"REDISCLI_AUTH", "cli-pw"}, {"BUFFERLOCK_REDIS", "redis://a redis://b redis://c"}}};
  for (const auto& u : parse({"k", "true"}, cli).redis.quorum)
    EXPECT_EQ(u.password, "cli-pw") << u.host;
}

TEST(CliQuorum, TlsOptionsApplyWhenAnyServerIsRediss) {
  // (The files are checked once per process, so only errors that come before
  // reading them are tested here: the options are taken, not refused.)
  EXPECT_EQ(usage_error({"-r", "redis://a", "-r", "rediss://b", "--tls-cert", "c.pem", "k", "true"}),
            "--tls-cert needs --tls-key");
  EXPECT_EQ(usage_error({"-r", "redis://a", "-r", "redis://b", "--tls-cert", "c.pem", "k", "true"}),
            "--tls-cert needs a rediss:// URL");
  const Env mixed{{{"BUFFERLOCK_TLS_CERT", "c.pem"}, {"BUFFERLOCK_REDIS", "redis://a rediss://b"}}};
  EXPECT_EQ(usage_error({"k", "true"}, mixed), "BUFFERLOCK_TLS_CERT needs --tls-key");
  const Env plain{{{"BUFFERLOCK_TLS_CERT", "c.pem"}, {"BUFFERLOCK_REDIS", "redis://a redis://b"}}};
  EXPECT_EQ(usage_key({"k", "true"}, plain), std::nullopt);
}

TEST(CliQuorum, ABadUrlAnywhereInTheListIsAUsageError) {
  EXPECT_EQ(usage_key({"-r", "redis://a", "-r", "redis://b:99999", "k", "true"}), Msg::usage_bad_redis_url);
  EXPECT_EQ(usage_key({"k", "true"}, Env{{{"BUFFERLOCK_REDIS", "redis://a http://b"}}}),
            Msg::usage_bad_redis_url);
}

// The CLI11 2.1.2 traps the parser is built around (src/cli.cpp, DEPS.md).

TEST(CliTraps, TheCommandsOwnFlagsAreNeverParsed) {
  // No positionals are declared: prefix_command() hands back KEY and the rest
  // verbatim, even words CLI11 would take for our options, or split ([a,b]).
  EXPECT_EQ(parse({"k", "grep", "-w", "--dir=", "--close=true", "-d"}).argv,
            (Words{"grep", "-w", "--dir=", "--close=true", "-d"}));
  EXPECT_EQ(parse({"[a,b]", "echo", "[c,d]", "{}"}).key, "[a,b]");
  EXPECT_EQ(parse({"[a,b]", "echo", "[c,d]", "{}"}).argv, (Words{"echo", "[c,d]", "{}"}));
  EXPECT_EQ(parse({"k", "--", "--help"}).argv, (Words{"--help"}));
  EXPECT_EQ(parse({"k", "--", "-w", "5"}).argv, (Words{"-w", "5"}));
  EXPECT_EQ(parse({"k", "--no-such-option"}).argv, (Words{"--no-such-option"}));
  // The first word after KEY naming one of our options is a slip: options go before KEY.
  EXPECT_NE(usage_error({"k", "--help"}).find("option '--help' after KEY 'k': options go before KEY"),
            std::string::npos);
  EXPECT_NE(usage_error({"k", "--wait=5", "true"}).find("option '--wait' after KEY"), std::string::npos);
  EXPECT_NE(usage_error({"k", "-nv", "true"}).find("option '-n' after KEY"), std::string::npos);
}

TEST(CliTraps, AnEmptyEqualsValueIsAValueNotTheNextWord) {
  // CLI11 reads "--dir=" as "--dir" and would take KEY for the directory.
  EXPECT_NE(usage_error({"--dir=", "k", "true"}).find("--dir needs a directory name"), std::string::npos);
  EXPECT_NE(usage_error({"--wait=", "k", "true"}).find("invalid duration ''"), std::string::npos);
  EXPECT_NE(usage_error({"-r", "redis://h", "--ttl=", "k", "true"}).find("--ttl ''"), std::string::npos);
  EXPECT_EQ(parse({"--dir=D", "k", "true"}).dir, "D");
  EXPECT_EQ(parse({"--dir==", "k", "true"}).dir, "=");
  // A value that is itself "--x=" loses nothing.
  EXPECT_EQ(parse({"-c", "--dir=", "k"}).argv, (Words{"/bin/sh", "-c", "--dir="}));
  EXPECT_EQ(parse({"--command", "--a=b", "k"}).argv, (Words{"/bin/sh", "-c", "--a=b"}));
}

TEST(CliTraps, AnEmptyWordIsAWordNotAnOptionGroup) {
  // CLI11 finds its nameless option groups under the name "".
  EXPECT_EQ(parse({"", "true"}).key, "");
  EXPECT_EQ(parse({"-r", "redis://h", "", "true", ""}).argv, (Words{"true", ""}));
  EXPECT_EQ(parse({"cache", "", "true"}).key, "");
  EXPECT_EQ(usage_error({"-d", "", "k", "true"}), "--dir needs a directory name");
  EXPECT_EQ(parse({"-c", "", "k"}).argv, (Words{"/bin/sh", "-c", ""}));
}

TEST(CliTraps, FlagsTakeNoValueNotEvenTrue) {
  for (const char* w : {"--close=yes", "--close=true", "--close=", "--close={}", "--fail-open=1"})
    EXPECT_NE(usage_error({w, "k", "true"}).find("takes no value"), std::string::npos) << w;
  EXPECT_EQ(usage_error({"--close=true", "k", "true"}), "option '--close' takes no value");
}

TEST(CliTraps, ParseErrorsBecomeOurMessages) {
  // CLI11's own texts and exit codes (1xx) never reach the user.
  EXPECT_EQ(usage_error({"-w"}), "option '-w' needs a value");
  EXPECT_EQ(usage_error({"--wait"}), "option '--wait' needs a value");
  EXPECT_EQ(usage_error({"--timeout"}), "option '--timeout' needs a value");
  EXPECT_EQ(usage_error({"-nw"}), "option '-w' needs a value");
  EXPECT_EQ(usage_error({"k", "true", "-d"}), "(no error)");
  EXPECT_EQ(usage_error({"-d"}), "option '-d' needs a value");
  EXPECT_EQ(usage_error({"--bogus", "k", "true"}), "unknown option '--bogus'");
  EXPECT_EQ(usage_error({"--bogus=1", "k", "true"}), "unknown option '--bogus'");
  EXPECT_EQ(usage_error({"-nZ", "k", "true"}), "unknown option '-Z'");
  EXPECT_EQ(usage_error({"--non", "k", "true"}), "unknown option '--non'"); // no abbreviations
  EXPECT_EQ(usage_error({"--help", "--bogus"}), "unknown option '--bogus'");
}

TEST(CliTraps, GetoptOptionsCli11WouldTakeForKeys) {
  // CLI11 classifies "-1", "-!" and "---x" as positionals; getopt does not.
  EXPECT_EQ(usage_error({"-1", "true"}), "unknown option '-1'");
  EXPECT_EQ(usage_error({"-n1", "true"}), "unknown option '-1'");
  EXPECT_EQ(usage_error({"-!", "true"}), "unknown option '-!'");
  EXPECT_EQ(usage_error({"---x=5", "true"}), "unknown option '---x'");
  EXPECT_EQ(parse({"--", "-1", "true"}).key, "-1");
  EXPECT_EQ(parse({"-", "true"}).key, "-");
}

TEST(CliTraps, EnvironmentIsNotAnOptionGiven) {
  // BUFFERLOCK_TTL does not make --ttl "given": the file backend ignores it,
  // and with redis the command line still wins.
  Env env{{{"BUFFERLOCK_TTL", "5"}, {"BUFFERLOCK_WAIT", "3"}}};
  EXPECT_EQ(parse({"k", "true"}, env).backend, Backend::file);
  EXPECT_EQ(parse({"-r", "redis://h", "--ttl", "9", "k", "true"}, env).redis.ttl, Nanos(9s));
  EXPECT_EQ(parse({"-r", "redis://h", "k", "true"}, env).redis.ttl, Nanos(5s));
  EXPECT_EQ(parse({"-n", "k", "true"}, env).wait, Nanos(0));
}

TEST(CliTraps, OnlyTheSubcommandsOptionsAreDeclared) {
  // Cache options are not declared outside cache, yet named as such.
  EXPECT_EQ(usage_error({"--cache-dir", "x", "k", "true"}), "--cache-dir works only with 'bufferlock cache'");
  EXPECT_EQ(usage_error({"status", "--gc", "k"}), "--gc works only with 'bufferlock cache'");
  EXPECT_EQ(parse({"cache", "--cache-dir", "C", "k", "true"}).cache.dir, "C");
  EXPECT_EQ(parse({"cache", "-d", "D", "k", "true"}).wait, infinite_duration);
}

TEST(CliTraps, RepeatedOptionsTakeTheLast) {
  EXPECT_EQ(parse({"-w", "1", "-w", "2", "k", "true"}).wait, Nanos(2s));
  EXPECT_EQ(parse({"-d", "A", "--dir", "B", "k", "true"}).dir, "B");
}

TEST(CliHelp, MadeFromTheDeclarations) {
  const std::string help = help_text(Command::run);
  for (const char* o : {"-d, --dir DIR", "-w, --wait, --timeout SECONDS", "--ttl SECONDS", "--cache-dir DIR",
                        "--on-lost warn|term", "-h, --help", "-V, --version", "--list-messages"})
    EXPECT_NE(help.find(o), std::string::npos) << o;
  // Defaults and variables come from the same declaration.
  EXPECT_NE(help.find("(default 60; env BUFFERLOCK_TTL)"), std::string::npos);
  EXPECT_NE(help.find("(default 75)"), std::string::npos);
  EXPECT_EQ(help.find("--nb"), std::string::npos); // accepted, not advertised
  for (const char* group : {"\nBackend:\n", "\nWaiting:\n", "\nExit codes:\n", "\nRunning:\n", "\nRedis:\n",
                            "\nMessages:\n", "\nExit status:", "\nExamples:\n"})
    EXPECT_NE(help.find(group), std::string::npos) << group;
  for (std::size_t at = 0, end; at < help.size(); at = end + 1) {
    end = help.find('\n', at);
    const std::string line = help.substr(at, end - at);
    if (line.starts_with("  bufferlock ") || line.starts_with("  # ")) continue; // usage and examples
    EXPECT_LE(line.size(), 88u) << line;
  }
}

TEST(CliHelp, CacheHelpDescribesCacheOptionsOnly) {
  const std::string help = help_text(Command::cache);
  EXPECT_NE(help.find("      --max-age SECONDS"), std::string::npos);
  EXPECT_EQ(help.find("      --ttl SECONDS"), std::string::npos);
  EXPECT_EQ(help.find("\nBackend:"), std::string::npos);
  EXPECT_EQ(help_text(Command::status), help_text(Command::run));
}

TEST(CliCache, SecondGenerationOptions) {
  const Options o =
      parse({"cache", "--depends", "a", "--depends=b c", "--keep-stderr", "--force", "k", "true"});
  EXPECT_EQ(o.cache.depends, (std::vector<std::string>{"a", "b c"}));
  EXPECT_TRUE(o.cache.keep_stderr);
  EXPECT_TRUE(o.cache.force);
  EXPECT_EQ(o.cache.store, CacheStoreKind::file);
  EXPECT_EQ(o.cache.max_entry, 64u * 1024 * 1024);
  EXPECT_TRUE(parse({"cache", "--list"}).cache.list);
  EXPECT_EQ(usage_error({"cache", "--list", "k"}), "unexpected argument 'k'");
  EXPECT_EQ(usage_error({"cache", "--depends=", "k", "true"}), "invalid --depends: an empty path");
  EXPECT_EQ(parse({"cache", "--output", "d", "--output=e/", "k", "true"}).cache.outputs,
            (std::vector<std::string>{"d", "e/"}));
  EXPECT_EQ(usage_error({"cache", "--output", "..", "k", "true"}),
            "invalid --output: a path that cannot be replaced as a whole");
  EXPECT_EQ(usage_error({"--output", "d", "k", "true"}).empty(), false);
  EXPECT_EQ(usage_error({"cache", "--max-entry", "0", "k", "true"}),
            "invalid size '0' for --max-entry: expected bytes > 0 with an optional K, M or G, such as 64M");
  EXPECT_NE(usage_error({"cache", "--max-entry", "12X", "k", "true"}).find("invalid size '12X'"),
            std::string::npos);
  EXPECT_EQ(usage_error({"cache", "--store", "nfs", "k", "true"}),
            "invalid --store 'nfs': expected file, redis, an http:// or https:// URL or s3://BUCKET/PREFIX");
}

TEST(CliCache, TheRedisStoreWantsOneRedisServer) {
  const Options o = parse({"cache", "--store", "redis", "-r", "redis://h", "--max-entry", "1K", "k", "true"});
  EXPECT_EQ(o.cache.store, CacheStoreKind::redis);
  EXPECT_EQ(o.backend, Backend::redis);
  EXPECT_EQ(o.cache.max_entry, 1024u);
  Env env{{{"BUFFERLOCK_CACHE_STORE", "redis"}, {"BUFFERLOCK_REDIS", "redis://h"}}};
  EXPECT_EQ(parse({"cache", "k", "true"}, env).cache.store, CacheStoreKind::redis);
  EXPECT_EQ(usage_error({"cache", "--store", "redis", "k", "true"}),
            "--store redis needs a Redis server (--redis URL)");
  EXPECT_EQ(usage_error({"cache", "--store", "redis", "-d", "D", "k", "true"}),
            "--store redis needs a Redis server (--redis URL)");
  EXPECT_EQ(usage_error({"cache", "--store", "redis", "-r", "redis://a", "-r", "redis://b", "k", "true"}),
            "--store redis needs exactly one Redis server, not 2");
  Env bad_env{{{"BUFFERLOCK_CACHE_STORE", "nfs"}}};
  EXPECT_EQ(usage_error({"cache", "k", "true"}, bad_env),
            "invalid BUFFERLOCK_CACHE_STORE 'nfs': expected file, redis, an http:// or https:// URL or s3://BUCKET/PREFIX");
}

// --on-lost term fits the renewal attempts and --kill-after into the lease
// (SPEC §7, lock/lease.hpp).
TEST(CliLease, DefaultKillAfterIsShortenedToWhatFits) {
  const Options o = parse({"-r", "redis://h", "--ttl", "10", "--on-lost", "term", "k", "true"});
  // room for retries: 10/3 - 0.102 - 3 attempts of 10/18 = 10/6 - 0.102
  EXPECT_EQ(o.redis.kill_after.count(), 1'564'666'672);
  // fits already: kept
  EXPECT_EQ(parse({"-r", "redis://h", "--on-lost", "term", "k", "true"}).redis.kill_after, 10s);
  // without term only the warning's moment uses it, with the timeouts as they are
  EXPECT_EQ(parse({"-r", "redis://h", "--ttl", "10", "k", "true"}).redis.kill_after.count(), 2'564'666'667);
}

TEST(CliLease, DefaultRenewalTimeoutsAreShortenedToFitAnyTtl) {
  // each at most TTL/36: an attempt of at most TTL/18
  const Options o = parse({"-r", "redis://h", "--ttl", "9", "--on-lost", "term", "k", "true"});
  EXPECT_EQ(o.redis.renew_connect(), 250ms);
  EXPECT_EQ(o.redis.renew_io(), 250ms);
  // the first acquisition keeps its own
  EXPECT_EQ(o.redis.connect_timeout, 1s);
  EXPECT_EQ(o.redis.io_timeout, 1s);
  for (const char* ttl : {"0.5", "1", "3", "6", "0.01", "0.005"})
    EXPECT_EQ(usage_error({"-r", "redis://h", "--ttl", ttl, "--on-lost", "term", "k", "true"}), "(no error)")
        << ttl;
  // 0.5/6 - 0.007: a renewal period and an attempt left to retry in
  EXPECT_EQ(parse({"-r", "redis://h", "--ttl", "0.5", "--on-lost", "term", "k", "true"}).redis.kill_after.count(),
            76'333'340);
  // no room for retries in 5 ms: the most that fits
  EXPECT_EQ(parse({"-r", "redis://h", "--ttl", "0.005", "--on-lost", "term", "k", "true"}).redis.kill_after.count(),
            727'782);
  // long TTLs keep the defaults; so does a run without --on-lost term
  const Options big = parse({"-r", "redis://h", "--ttl", "60", "--on-lost", "term", "k", "true"});
  EXPECT_EQ(big.redis.renew_connect() + big.redis.renew_io(), 2s);
  const Options warn = parse({"-r", "redis://h", "--ttl", "1", "k", "true"});
  EXPECT_EQ(warn.redis.renew_connect() + warn.redis.renew_io(), 2s);
  // a given one stays, the other is shortened
  const Options one = parse({"-r", "redis://h", "--ttl", "9", "--io-timeout", "0.2", "--on-lost", "term", "k", "true"});
  EXPECT_EQ(one.redis.renew_io(), 200ms);
  EXPECT_EQ(one.redis.renew_connect(), 250ms);
  // below about 4 ms not even attempts of TTL/18 fit
  const std::string tiny = usage_error({"-r", "redis://h", "--ttl", "0.003", "--on-lost", "term", "k", "true"});
  EXPECT_NE(tiny.find("--ttl 0.003 is too short for --on-lost term"), std::string::npos) << tiny;
  EXPECT_NE(tiny.find("attempts of TTL/36 + TTL/36"), std::string::npos) << tiny;
}

TEST(CliLease, AnExplicitValueThatDoesNotFitIsAUsageError) {
  const std::string e =
      usage_error({"-r", "redis://h", "--ttl", "10", "--on-lost", "term", "--kill-after", "5.5", "k", "true"});
  EXPECT_NE(e.find("--kill-after 5.500"), std::string::npos) << e;
  EXPECT_NE(e.find("--ttl 10.000"), std::string::npos) << e;
  EXPECT_NE(e.find("at most 5.454"), std::string::npos) << e; // 10 - 10/3 - 0.102 - 2 x 10/18
  // a given one may use the retries' room
  EXPECT_EQ(parse({"-r", "redis://h", "--ttl", "10", "--on-lost", "term", "--kill-after", "5.4", "k", "true"})
                .redis.kill_after,
            5400ms);
  EXPECT_EQ(usage_error({"-r", "redis://h", "--ttl", "10", "--kill-after", "5.5", "k", "true"}), "(no error)");
  EXPECT_NE(usage_error({"-r", "redis://h", "--ttl", "1", "--on-lost", "term", "--kill-after", "1", "k", "true"})
                .find("--kill-after 1.000 does not fit in --ttl 1.000"),
            std::string::npos);
  // a given timeout is kept, and named
  const std::string io =
      usage_error({"-r", "redis://h", "--ttl", "1", "--io-timeout", "1", "--on-lost", "term", "k", "true"});
  EXPECT_NE(io.find("--ttl 1.000 is too short for --on-lost term"), std::string::npos) << io;
  EXPECT_NE(io.find("attempts of TTL/36 + --io-timeout (1.028)"), std::string::npos) << io;
  const std::string both = usage_error({"-r", "redis://h", "--ttl", "1", "--connect-timeout", "1",
                                        "--io-timeout", "1", "--on-lost", "term", "k", "true"});
  EXPECT_NE(both.find("attempts of --connect-timeout + --io-timeout (2.000)"), std::string::npos) << both;
  // a value from the environment was given too, and is named as it was given
  Env env{{{"BUFFERLOCK_CONNECT_TIMEOUT", "1"}}};
  const std::string from_env = usage_error({"-r", "redis://h", "--ttl", "1", "--on-lost", "term", "k", "true"}, env);
  EXPECT_NE(from_env.find("attempts of BUFFERLOCK_CONNECT_TIMEOUT + TTL/36"), std::string::npos) << from_env;
  // small timeouts make room
  EXPECT_EQ(usage_error({"-r", "redis://h", "--ttl", "1", "--connect-timeout", "0.1", "--io-timeout", "0.1",
                         "--on-lost", "term", "k", "true"}),
            "(no error)");
}

TEST(Cli, HttpStoreUrlAndItsOptions) {
  const Options o = parse({"cache", "--store", "https://u:p%40ss@cache.example:8443/ci", "--store-timeout", "2.5",
                           "--store-token-file", "T", "--tls-ca", test_ca_file(), "k", "true"});
  EXPECT_EQ(o.cache.store, CacheStoreKind::http);
  EXPECT_EQ(o.cache.store_url.base, "https://cache.example:8443/ci/");
  EXPECT_EQ(o.cache.store_url.user, "u");
  EXPECT_EQ(o.cache.store_url.password, "p@ss");
  EXPECT_EQ(o.cache.store_url.display, "https://u:***@cache.example:8443/ci");
  EXPECT_EQ(o.cache.store_timeout, 2500ms);
  EXPECT_EQ(o.cache.store_token_file, "T");
  EXPECT_EQ(o.redis.tls.ca, test_ca_file());
  EXPECT_EQ(o.backend, Backend::file); // the lock: the file lock without -r
  EXPECT_FALSE(o.cache.max_entry_given);
  Env env;
  env.vars = {{"BUFFERLOCK_CACHE_STORE", "http://h/c/"}, {"BUFFERLOCK_STORE_TIMEOUT", "3"}};
  const Options e = parse({"cache", "k", "true"}, env);
  EXPECT_EQ(e.cache.store_url.base, "http://h/c/");
  EXPECT_EQ(e.cache.store_timeout, 3s);
  EXPECT_EQ(parse({"cache", "--store", "http://h", "-r", "redis://r", "k", "true"}).backend, Backend::redis);
}

TEST(Cli, HttpStoreBadInput) {
  EXPECT_EQ(usage_error({"cache", "--store", "ftp://h/x", "k", "true"}),
            "invalid --store 'ftp://h/x': expected file, redis, an http:// or https:// URL or s3://BUCKET/PREFIX");
  EXPECT_EQ(usage_error({"cache", "--store", "http://u:secret@/x", "k", "true"}),
            "invalid --store 'http://u:***@/x': no host");
  EXPECT_EQ(usage_error({"cache", "--store", "http://h:99999/x", "k", "true"}),
            "invalid --store 'http://h:99999/x': bad port");
  EXPECT_EQ(usage_error({"cache", "--store", "http://h/x?a=1", "k", "true"}),
            "invalid --store 'http://h/x?a=1': a query or fragment has no place in it");
  EXPECT_EQ(usage_error({"cache", "--store-timeout", "1", "k", "true"}),
            "--store-timeout needs an http:// or https:// --store");
  EXPECT_EQ(usage_error({"cache", "--store", "redis", "-r", "redis://h", "--store-token-file", "T", "k", "true"}),
            "--store-token-file needs an http:// or https:// --store");
  EXPECT_EQ(usage_error({"cache", "--tls-ca", "CA", "k", "true"}),
            "--tls-ca needs a rediss:// URL or an https:// --store");
  // An https store's CA file is read and parsed as rediss:// has it (SPEC §12).
  EXPECT_EQ(usage_error({"cache", "--store", "https://h/x", "--tls-ca", "/nonexistent/ca.pem", "k", "true"}),
            "TLS: --tls-ca /nonexistent/ca.pem: No such file or directory");
  Env ca_env;
  ca_env.vars = {{"BUFFERLOCK_TLS_CA", "/nonexistent/ca.pem"}};
  EXPECT_NE(usage_error({"cache", "--store", "https://h/x", "k", "true"}, ca_env).find("/nonexistent/ca.pem"),
            std::string::npos);
  EXPECT_NE(usage_error({"cache", "--store", "http://h", "--store-timeout", "abc", "k", "true"}), "(no error)");
}
