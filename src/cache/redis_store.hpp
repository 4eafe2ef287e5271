// Entries on a Redis server (--store redis, SPEC §15), in the same bytes as
// an entry file (cache/entry.hpp), so that both stores share verification.
//
// Keys, all of one KEY in one hash slot ({...} is a hash tag):
//   {PREFIX<md5>}:entry          the entry without inputs (PREFIX: --namespace, md5 of KEY)
//   {PREFIX<md5>}:entry:<hex>    the entry at the address <hex>: the digest of its inputs
//                                (--depends) and --output list (entry_address, cache/entry.hpp)
//   {PREFIX<md5>}:tmp:<token>    a build on its way, with a time to live
// Entries and builds are hashes: field "h" the header, "0", "1", ... the body
// (stdout, then any stored stderr) in parts of about 1 MiB, "t" the trailer;
// their concatenation is an entry file. "u", once the entry was hit, is its
// last use (ms since the epoch; SPEC §22), outside the entry's bytes. Parts are separate values so that no
// write grows one large string (whose reallocation copies it, blocking the
// server). A build sends its output part by part, then a script adds the
// header and the trailer and renames it into place (atomic publication). A
// hit reads the parts into an unnamed local file and verifies it there before
// serving its first byte: neither side holds an entry in memory.
#pragma once

#include "cache/store.hpp"
#include "lock/settings.hpp"
#include "redis/client.hpp"
#include "redis/connection.hpp"
#include "util/diag.hpp"

#include <functional>
#include <optional>

namespace bufferlock {

class RedisStore final : public EntryStore {
public:
  // `expire_after`: max-age + stale (entries without --max-age never expire).
  RedisStore(const RedisLockSettings& settings, std::optional<Nanos> expire_after);

  std::string_view name() const override { return "redis"; }
  std::string location() const override { return server(); }
  // Bytes cost the server's memory and the network: always compressed, and
  // --max-entry's default applies.
  bool compresses(bool) const override { return true; }
  bool limits_entries() const override { return true; }
  // Entries expire by their time to live (--max-age is theirs); --max-unused
  // and --max-size remove entries by their last use ("u", else the build).
  std::variant<GcCounts, SysError> gc(const GcPolicy& policy) const override;
  // Sets "u" of the entry's hash, unless it was set less than a minute ago.
  void record_use(const CachedEntry& e) const override;
  std::string where(std::string_view key, const Inputs& inputs) const override;
  std::optional<SysError> prepare() const override { return std::nullopt; }
  Lookup lookup(std::string_view key, const Inputs& inputs) const override;
  Lookup peek(std::string_view key, const Inputs& inputs) const override;
  Headers headers_of(std::string_view key) const override;
  Lookup read_candidate(std::string_view key, const StaleCandidate& c) const override;
  std::optional<SysError> drop(std::string_view key) const override;
  std::variant<std::vector<ListedEntry>, SysError> list_entries() const override;
  BuildOrError begin_build(std::string_view key, const Inputs& inputs, std::int64_t created_ns,
                           const BuildContents& what) const override;
  void after_fork() const override;

  // The server's address, password redacted.
  std::string server() const { return settings_.url.display(); }
  // {PREFIX<md5>}:entry, or {PREFIX<md5>}:entry:<address hex>
  std::string entry_key(std::string_view key, const Inputs& inputs = std::nullopt) const;
  // The SCAN pattern of every entry key under this prefix (any inputs).
  std::string entry_pattern() const;

  // One command, sent to the node of the entry's slot (every key of an
  // entry shares its hash tag; SCAN goes to the first node) through the
  // lock's client: a server, a cluster or the master sentinels name. A kept
  // connection that the server closed meanwhile (idle timeout, restart) is
  // opened again once.
  RedisResult<RedisReply> call(const std::vector<std::string_view>& argv) const;
  // A script on KEYS and ARGV, the same way (EVALSHA, EVAL when the server
  // does not know it yet).
  RedisResult<RedisReply> eval(const RedisScript& script, const std::vector<std::string>& keys,
                               const std::vector<std::string_view>& argv) const;
  // A script sent the same way whose reply is never read (RedisClient::eval_unread).
  // RedisClient::probe_slot_of, for every client this store makes.
  void probe_slot_of(std::string key) const;
  void eval_unread(const RedisScript& script, const std::vector<std::string>& keys,
                   const std::vector<std::string_view>& argv) const;

  std::optional<Nanos> expire_after() const { return expire_after_; }

private:
  Lookup read_entry(std::string_view key, const Inputs& address, const std::string& ekey) const;
  // The entry keys of `key` for any inputs (SCAN on the node of its slot).
  std::variant<std::vector<std::string>, SysError> keys_of(std::string_view key) const;
  // SCAN MATCH `pattern` on the node of `node_of`'s slot (the first node when
  // empty), `each` called with every name found; its first error ends it.
  std::optional<SysError> scan(std::string_view node_of, const std::string& pattern,
                               const std::function<std::optional<SysError>(std::string_view)>& each) const;
  // The decoded header of `ekey` and the entry's size; nullopt when the
  // value is gone or is no entry.
  RedisResult<std::optional<std::pair<EntryHeader, std::uint64_t>>>
  read_header(const std::string& ekey) const;
  // SEND(client) on the lock's client, once more if a kept connection dropped.
  template <class Send> RedisResult<RedisReply> on_client(Send send) const;
  RedisClient& client() const;

  RedisLockSettings settings_;
  std::optional<Nanos> expire_after_;
  mutable std::optional<RedisClient> client_;
  mutable std::string probe_; // probe_slot_of's key, empty: none
};

} // namespace bufferlock
