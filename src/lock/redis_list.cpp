#include "lock/redis_list.hpp"

#include "lock/file_lock.hpp"
#include "lock/holder_record.hpp"
#include "lock/redis_lock.hpp"
#include "messages.hpp"
#include "redis/cluster.hpp"
#include "redis/scan.hpp"

#include <functional>
#include <map>
#include <utility>

namespace bufferlock {

namespace {

bool is_md5_hex(std::string_view s) {
  if (s.size() != 32) return false;
  for (const char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

// What precedes the digest in a lock key: PREFIX, or {PREFIX} with --hash-tag.
std::string key_base(const LockSettings& s) { return s.hash_tag ? "{" + s.key_prefix + "}" : s.key_prefix; }

} // namespace

std::optional<RedisLockName> parse_redis_lock_name(const LockSettings& settings, std::string_view name) {
  const std::string base = key_base(settings);
  // A slot key of a lock without --hash-tag is {LOCKKEY}:slot:I.
  const std::size_t at = name.starts_with(base)         ? base.size()
                         : name.starts_with("{" + base) ? base.size() + 1
                                                        : std::string::npos;
  if (at == std::string::npos || name.size() < at + 32 || !is_md5_hex(name.substr(at, 32)))
    return std::nullopt;
  RedisLockName out{std::string(name.substr(at, 32)), 0};
  const std::string lock_key = base + out.digest;
  if (name == lock_key) return out;
  const std::size_t colon = name.rfind(':');
  if (colon == std::string_view::npos || colon + 1 == name.size()) return std::nullopt;
  unsigned slot = 0;
  for (const char c : name.substr(colon + 1)) {
    if (c < '0' || c > '9' || slot > 1000) return std::nullopt;
    slot = slot * 10 + static_cast<unsigned>(c - '0');
  }
  if (slot == 0 || name != companion_key(lock_key, ":slot:" + std::to_string(slot))) return std::nullopt;
  out.slot = slot;
  return out;
}

namespace {

using FoundLocks = std::map<std::pair<std::string, unsigned>, std::string>; // (digest, slot) -> key name

// The SCAN MATCH patterns of our keys: the lock keys and, without
// --hash-tag, the slot keys {LOCKKEY}:slot:I.
std::vector<std::string> scan_patterns(const LockSettings& settings) {
  const std::string base = glob_escape(key_base(settings));
  std::vector<std::string> patterns{base + "*"};
  if (!settings.hash_tag) patterns.push_back("\\{" + base + "*");
  return patterns;
}

// Every lock of `found` that `state_of` finds held, on `server`; the first
// error stops.
std::vector<ListedLock>
held_locks(const FoundLocks& found, const std::string& server,
           const std::function<RedisResult<RedisSlotState>(const std::string&)>& state_of,
           std::optional<RedisError>& error) {
  std::vector<ListedLock> out;
  for (const auto& [id, name] : found) {
    auto state = state_of(name);
    if (auto* e = std::get_if<RedisError>(&state)) {
      error = *e;
      return {};
    }
    const RedisSlotState& st = std::get<RedisSlotState>(state);
    if (st.pttl == -2) continue; // expired or released since the SCAN
    out.push_back({{true, server, name}, id.first, id.second, redis_status_info(st)});
  }
  return out;
}

// The first state of a one-key answer.
RedisResult<RedisSlotState> only(RedisResult<std::vector<RedisSlotState>> states) {
  if (auto* e = std::get_if<RedisError>(&states)) return *e;
  RedisSlotState first = std::move(std::get<std::vector<RedisSlotState>>(states).front());
  return first;
}

// Over a quorum (SPEC §13): SCAN every server, then a lock is listed when a
// majority hold it with one token.
std::vector<ListedLock> list_quorum_locks(const RedisLockSettings& settings,
                                          std::optional<std::string>& error) {
  QuorumClient quorum(settings.quorum, {settings.connect_timeout, settings.io_timeout});
  const auto failed = [&](const RedisError& e) {
    error = message(Msg::redis_status_failed, {{"server", quorum.server()}, {"error", e.text}});
    return std::vector<ListedLock>();
  };
  auto names = quorum.scan(scan_patterns(settings));
  if (auto* e = std::get_if<RedisError>(&names)) return failed(*e);
  FoundLocks found;
  for (const auto& name : std::get<std::vector<std::string>>(names))
    if (auto n = parse_redis_lock_name(settings, name)) found.emplace(std::pair(n->digest, n->slot), name);
  std::optional<RedisError> e;
  auto out = held_locks(
      found, quorum.server(),
      [&](const std::string& name) { return only(quorum_slot_states(quorum, {name}, true)); }, e);
  return e ? failed(*e) : out;
}

} // namespace

std::vector<ListedLock> list_redis_locks(const RedisLockSettings& settings,
                                         std::optional<std::string>& error) {
  if (settings.quorum.size() > 1) return list_quorum_locks(settings, error);
  RedisClient client(settings.url, settings.password, {settings.connect_timeout, settings.io_timeout},
                     settings.backoff());
  const auto failed = [&](const RedisError& e) {
    error = message(Msg::redis_status_failed, {{"server", client.server()}, {"error", e.text}});
    return std::vector<ListedLock>();
  };
  const std::vector<std::string> patterns = scan_patterns(settings);
  FoundLocks found;
  // A cluster keeps its keys on its masters: SCAN each (a single server: itself).
  auto masters = client.masters();
  if (auto* e = std::get_if<RedisError>(&masters)) return failed(*e);
  std::vector<std::optional<RedisUrl::Address>> nodes;
  for (const auto& m : std::get<std::vector<RedisUrl::Address>>(masters))
    nodes.emplace_back(m);
  if (nodes.empty()) nodes.emplace_back(std::nullopt);
  for (const auto& node : nodes) {
    const auto send = [&](const std::vector<std::string_view>& scan) {
      return node ? client.command_on(*node, scan) : client.command({}, scan);
    };
    const auto each = [&](std::string_view name) {
      if (auto n = parse_redis_lock_name(settings, name)) found.emplace(std::pair(n->digest, n->slot), name);
      return true;
    };
    for (const auto& pattern : patterns)
      if (auto e = scan_all(pattern, send, each)) return failed(*e);
  }
  // One key per script: on a cluster the locks live in different slots.
  std::optional<RedisError> e;
  auto out = held_locks(
      found, client.server(),
      [&](const std::string& name) { return only(redis_slot_states(client, {name})); }, e);
  return e ? failed(*e) : out;
}

} // namespace bufferlock
