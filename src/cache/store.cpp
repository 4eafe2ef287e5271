#include "cache/store.hpp"

#include "cache/inputs.hpp"
#include "messages.hpp"
#include "util/duration.hpp"
#include "util/md5.hpp"

#include <algorithm>
#include <tuple>

namespace bufferlock {

std::string entry_file_name(std::string_view key, const Inputs& address) {
  std::string n = md5_hex(key);
  if (address) n += '.' + address->hex();
  return n + ".entry";
}

namespace {

bool is_hex(std::string_view s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

} // namespace

bool is_entry_file_name(std::string_view n, std::string_view stem) {
  if (!n.starts_with(stem) || !n.ends_with(".entry")) return false;
  n.remove_suffix(6);
  const std::string_view key_md5 = n.substr(0, 32);
  return (n.size() == 32 || (n.size() == 65 && n[32] == '.' && is_hex(n.substr(33)))) && is_hex(key_md5);
}

Lookup newest_readable(std::string_view key, const std::vector<std::string>& outputs,
                       std::vector<StaleCandidate> candidates,
                       const std::function<Lookup(const StaleCandidate&)>& read) {
  std::erase_if(candidates,
                [&](const StaleCandidate& c) { return c.header.key != key || c.header.outputs != outputs; });
  // Newest first; of two as new, the greater name first (a fixed order).
  std::sort(candidates.begin(), candidates.end(), [](const StaleCandidate& a, const StaleCandidate& b) {
    return std::tie(a.header.created_ns, a.name) > std::tie(b.header.created_ns, b.name);
  });
  Lookup corrupt{LookupState::missing, {}, {}};
  for (const StaleCandidate& c : candidates) {
    Lookup l = read(c);
    if (l.state == LookupState::found) l.why = corrupt.why;
    if (l.state == LookupState::found || l.state == LookupState::unreadable) return l;
    if (l.state == LookupState::corrupt && corrupt.state != LookupState::corrupt) corrupt = std::move(l);
  }
  return corrupt;
}

Lookup EntryStore::newest(std::string_view key, const std::vector<std::string>& outputs) const {
  Headers candidates = headers_of(key);
  if (auto* l = std::get_if<Lookup>(&candidates)) return std::move(*l);
  return newest_readable(key, outputs, std::move(std::get<std::vector<StaleCandidate>>(candidates)),
                         [&](const StaleCandidate& c) { return read_candidate(key, c); });
}

namespace {

std::string seconds_ago(std::int64_t then_ns, std::int64_t now_ns) {
  return std::to_string(std::max<std::int64_t>(0, now_ns - then_ns) / 1'000'000'000) + "s ago";
}

} // namespace

std::vector<Removal> by_use(std::vector<WeighedEntry> entries, const GcPolicy& policy,
                            std::string_view since) {
  // Least recently used first; of two used as late, the greater name first (a fixed order).
  std::sort(entries.begin(), entries.end(), [](const WeighedEntry& a, const WeighedEntry& b) {
    return std::tie(a.last_used_ns, b.name) < std::tie(b.last_used_ns, a.name);
  });
  const auto when = [&](const WeighedEntry& e) {
    return std::string(since) + " " + seconds_ago(e.last_used_ns, policy.now_ns);
  };
  std::vector<Removal> out;
  std::uint64_t total = 0;
  for (const auto& e : entries)
    total += e.stored;
  for (const auto& e : entries) {
    if (policy.max_unused && policy.now_ns - e.last_used_ns > policy.max_unused->count()) {
      out.push_back({e.name, when(e) + ", over --max-unused " + format_seconds(*policy.max_unused) + "s"});
    } else if (policy.max_size && total > *policy.max_size) {
      out.push_back({e.name, "least recently used (" + when(e) + "), over --max-size " +
                                 std::to_string(*policy.max_size) + " bytes"});
    } else {
      continue;
    }
    total -= e.stored;
  }
  return out;
}

void say_removed(const EntryHeader* h, const std::string& where, std::uint64_t stored, std::string_view why) {
  diag::debug_lazy([&] {
    if (!h) return message(Msg::cache_removed_file, {{"path", where}, {"why", why}});
    const std::string inputs = h->inputs ? h->inputs->hex().substr(0, short_inputs_digits) : "-";
    return message(Msg::cache_removed, {{"key", display_key(h->key)},
                                        {"inputs", inputs},
                                        {"stored", std::to_string(stored)},
                                        {"from", where},
                                        {"why", why}});
  });
}

ListedEntry listed_entry(const EntryHeader& h, std::uint64_t stored) {
  return {h.created_ns, h.stdout_size(), h.key, h.inputs, h.outputs.size(), stored};
}

std::variant<StatsReport, SysError> EntryStore::stats() const {
  StatsReport r{std::string(name()), location(), {}, {}};
  if (!stats_) return r;
  auto read = stats_->read();
  if (auto* e = std::get_if<SysError>(&read)) return *e;
  const StatsSums& sums = std::get<StatsSums>(read);
  r.total = sums.total;
  r.top = top_keys(sums.keys);
  return r;
}

std::optional<SysError> EntryStore::zero_stats() const {
  if (!stats_) return std::nullopt;
  return stats_->zero();
}

} // namespace bufferlock
