#include "lock/status_format.hpp"

#include "util/json.hpp"
#include "util/md5.hpp"
#include "util/text.hpp"

#include <fmt/format.h>

namespace bufferlock {

std::string status_fields(const StatusInfo& info, std::int64_t now_ns) {
  std::string out;
  if (info.slots_total) out += fmt::format(" slots={}/{}", info.slots_taken.value_or(0), *info.slots_total);
  // From the milliseconds as they are: in nanoseconds a TTL Redis accepts (up to
  // ~292 million years) would overflow.
  if (info.no_ttl)
    out += " ttl=none";
  else if (info.ttl_ms)
    out += fmt::format(" ttl={}.{:03}", *info.ttl_ms / 1000, *info.ttl_ms % 1000);
  return out + holder_fields(info.holder, now_ns);
}

namespace {

// The fields both documents share, after "key", "digest" and "state".
void add_place_and_info(JsonObject& o, const LockPlace& place, const StatusInfo& info, std::int64_t now_ns) {
  o.string("backend", place.redis ? "redis" : "file");
  o.string(place.redis ? "server" : "dir", place.where);
  o.string(place.redis ? "redis_key" : "path", place.name);
  const HolderInfo& h = info.holder;
  if (!h.pids.empty()) o.numbers("pids", {h.pids.begin(), h.pids.end()});
  if (!h.host.empty()) o.string("host", h.host);
  // since= of the text: whole milliseconds held, cut as holder_fields cuts them.
  if (h.since_ns) o.millis("since", now_ns > *h.since_ns ? (now_ns - *h.since_ns) / 1'000'000 : 0);
  if (h.fence) o.number("fence", *h.fence);
  if (info.no_ttl)
    o.boolean("no_ttl", true);
  else if (info.ttl_ms)
    o.millis("ttl", *info.ttl_ms);
  if (info.slots_total) {
    o.number("slots", *info.slots_total);
    o.number("slots_taken", info.slots_taken.value_or(0));
  }
}

std::string listed_json(const ListedLock& l, std::int64_t now_ns) {
  JsonObject o;
  if (l.info.holder.key) o.string("key", *l.info.holder.key);
  o.string("digest", l.digest).string("state", "held");
  if (l.slot > 0) o.number("slot", l.slot);
  add_place_and_info(o, l.place, l.info, now_ns);
  return o.str();
}

} // namespace

std::string status_json(std::string_view key, LockState state, const LockPlace& place, const StatusInfo& info,
                        std::int64_t now_ns) {
  JsonObject o;
  o.string("key", key)
      .string("digest", md5_hex(key))
      .string("state", state == LockState::held ? "held" : "free");
  add_place_and_info(o, place, info, now_ns);
  return o.str() + "\n";
}

std::string list_text(const std::vector<ListedLock>& locks, std::int64_t now_ns) {
  std::string out;
  for (const ListedLock& l : locks) {
    out += l.info.holder.key ? escape_key(*l.info.holder.key) : "md5:" + l.digest;
    if (l.slot > 0) out += " slot=" + std::to_string(l.slot);
    out += status_fields(l.info, now_ns);
    out += '\n';
  }
  return out;
}

std::string list_json(const std::vector<ListedLock>& locks, std::int64_t now_ns) {
  std::vector<std::string> items;
  items.reserve(locks.size());
  for (const ListedLock& l : locks)
    items.push_back(listed_json(l, now_ns));
  return JsonObject().raw("locks", json_array(items)).str() + "\n";
}

} // namespace bufferlock
