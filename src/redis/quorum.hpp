// A lock over N independent masters (SPEC §13, the Redlock design): every
// operation goes to all N at once (connections opened one after another,
// then one request written to each and one poll(2) over all sockets until
// every reply is in or the I/O timeout passes), so a quorum costs about one
// round trip, not N.
#pragma once

#include "redis/connection.hpp"
#include "redis/scripts.hpp"
#include "redis/url.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bufferlock {

// How many of n servers make a majority: n/2 + 1.
constexpr std::size_t quorum_majority(std::size_t n) { return n / 2 + 1; }

// How long a lock taken in `elapsed` is still surely held: the TTL less the
// time the attempt took, less the clock drift allowance (1 % of the TTL + 2 ms).
Nanos quorum_validity(Nanos ttl, Nanos elapsed);

enum class QuorumDecision { held, busy, error };

// The decision over n servers, of which `acted` did what was asked (stored
// the token, renewed, released) and `failed` gave no answer (an error):
// held when a majority acted while `validity` was left; otherwise an error
// when too few answered to tell (the answers alone cannot make a majority),
// else busy. Operations without a validity pass none.
QuorumDecision quorum_decide(std::size_t n, std::size_t acted, std::size_t failed,
                             Nanos validity = Nanos::max());

// The PTTL a majority of n servers still holds a key for, given the PTTL
// replies of those that answered (-2: not held there, -1: no expiry): the
// majority's shortest, -1 when a majority has no expiry, -2 when no
// majority holds it.
long long quorum_pttl(const std::vector<long long>& answers, std::size_t n);

class QuorumClient {
public:
  // `urls` with their passwords filled in; nothing is connected yet.
  QuorumClient(std::vector<RedisUrl> urls, RedisTimeouts timeouts);

  // Takes a slot of a lock (SPEC §14) on a majority within its validity.
  // `keys` are the single server's: {fence counter, slot 0 key, its holder
  // record, slot 1 key, its record, ...}; ARGV {token, ms, record}. First
  // every server takes its lowest free slot (acquire_slots_script, one
  // round); when no slot got a majority, each slot that may still be free on
  // a majority is tried as one quorum attempt, the most granted first. Our
  // token is deleted from every slot but the one held (from all when none
  // is). The slot held, nullopt when busy, or the error when no majority
  // could even be asked.
  RedisResult<std::optional<unsigned>> acquire_slot(const std::vector<std::string>& keys,
                                                    std::string_view wake_key, std::string_view token,
                                                    std::string_view ms, std::string_view record, Nanos ttl);
  // A compare-with-token script on all, KEYS `keys` and ARGV {token, ms}:
  // true when a majority acted.
  RedisResult<bool> compare(const RedisScript& script, const std::vector<std::string>& keys,
                            std::string_view token, std::string_view ms);
  // A read-only script on all: every member's reply, or the error when too
  // few answered to make a majority.
  RedisResult<std::vector<RedisResult<RedisReply>>> eval_all(const RedisScript& script,
                                                             const std::vector<std::string>& keys,
                                                             const std::vector<std::string_view>& argv);
  // SCAN ... MATCH each of `patterns` to the end on every server at once:
  // the names found on any that answered, or the error when too few did.
  RedisResult<std::vector<std::string>> scan(const std::vector<std::string>& patterns);
  std::size_t size() const { return members_.size(); }
  // A majority of the servers has answered at least once in this run (SPEC
  // §7: an outage of such a quorum is ridden out).
  bool answered() const;
  // The timeouts from now on, also of the connections already open.
  void set_timeouts(RedisTimeouts timeouts);
  // BLPOP on the first server that is connected; false when none is.
  bool wait_wake(std::string_view wake_key, Nanos d, Nanos io_timeout);

  std::string server() const; // "N servers: URL URL ..."

private:
  struct Member {
    RedisUrl url;
    std::optional<RedisConnection> conn;
    bool answered = false; // a reply (an error reply too) was read from it
  };
  // One command per member (the same for all), all at once: the replies in
  // member order.
  std::vector<RedisResult<RedisReply>> fan_out(const std::vector<std::string_view>& args);
  // Each member its own command, all at once; a member given none is left
  // alone (nullopt in its place).
  std::vector<std::optional<RedisResult<RedisReply>>>
  fan_out_each(const std::vector<std::vector<std::string_view>>& args);
  // Opens the missing connections of the `wanted` members in parallel; a
  // failure goes to `out`.
  void connect_all(std::vector<std::optional<RedisResult<RedisReply>>>& out, const std::vector<bool>& wanted);
  RedisError no_majority(const std::vector<RedisResult<RedisReply>>& replies) const;

  std::vector<Member> members_;
  RedisTimeouts timeouts_;
};

} // namespace bufferlock
