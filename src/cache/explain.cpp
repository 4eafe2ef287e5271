#include "cache/explain.hpp"

#include "messages.hpp"
#include "util/clock.hpp"
#include "util/diag.hpp"
#include "util/host.hpp"

#include <algorithm>

namespace bufferlock {

namespace {

std::string age_of(const EntryHeader& h) {
  return format_seconds(Nanos(std::max<std::int64_t>(0, wall_clock_ns() - h.created_ns)));
}

// The line goes out with -v as a -v line, else (--explain) as a notice
// that --quiet silences like the warnings.
void say(const std::string& line) {
  if (diag::verbose())
    diag::debug(line);
  else
    diag::warn(line);
}

std::string joined_paths(const std::vector<std::string>& paths) {
  if (paths.empty()) return "no --output";
  std::string out;
  for (const auto& p : paths)
    out += (out.empty() ? "" : ", ") + p;
  return out;
}

// Against the newest entry of KEY for other inputs: which PATHs differ.
std::string other_inputs(const EntryHeader& newest, const Manifest& now) {
  std::string why = "other inputs than its newest entry (age " + age_of(newest) + "s)";
  const auto was = manifest_of(newest);
  if (!was) return why + ", which records no manifest of its inputs";
  Manifest settled = now; // only here: a hit never names files
  settled.settle();
  const std::string diff = manifest_diff(*was, settled);
  if (diff.empty()) return why + ": no --depends PATH differs (other --exclude patterns)";
  return why + ": " + diff;
}

// A miss at the caller's address: what KEY's other entries say of it.
std::string missing_reason(const CacheRequest& o, const EntryStore& store, const Inputs& inputs,
                           const Manifest& now) {
  auto listed = store.headers_of(o.key);
  if (const auto* l = std::get_if<Lookup>(&listed))
    return "no entry of these inputs (the entries of this KEY could not be listed: " + l->why + ")";
  auto& all = std::get<std::vector<StaleCandidate>>(listed);
  std::erase_if(all, [&](const StaleCandidate& c) { return c.header.key != o.key; });
  if (all.empty()) return "no entry of this KEY";
  for (const auto& c : all)
    if (c.header.has_inputs(inputs) && c.header.outputs != o.cache.outputs)
      return "other --output list (its entry of these inputs holds " + joined_paths(c.header.outputs) + ")";
  const EntryHeader& newest =
      std::max_element(all.begin(), all.end(), [](const StaleCandidate& a, const StaleCandidate& b) {
        return a.header.created_ns < b.header.created_ns;
      })->header;
  if (newest.has_inputs(inputs)) return "its entry of these inputs could not be served";
  return other_inputs(newest, now);
}

} // namespace

bool explaining(const CacheRequest& o) { return o.cache.explain || diag::verbose(); }

EntrySection manifest_section(Manifest seen) {
  seen.host = host_name();
  return {entry_section_manifest, encode_manifest(std::move(seen))};
}

void explain_hit(const CacheRequest& o, const EntryHeader& h) {
  const auto m = manifest_of(h);
  const std::string host = m && !m->host.empty() ? m->host : "a host it does not record";
  say(message(Msg::cache_explain_hit, {{"key", display_key(o.key)}, {"age", age_of(h)}, {"host", host}}));
}

void explain_stale(const CacheRequest& o, const EntryHeader& h, std::string_view what) {
  if (!explaining(o)) return;
  say(message(Msg::cache_explain_stale, {{"key", display_key(o.key)},
                                         {"age", age_of(h)},
                                         {"max_age", format_seconds(o.cache.max_age.value_or(Nanos(0)))},
                                         {"stale", format_seconds(o.cache.stale.value_or(Nanos(0)))},
                                         {"what", std::string(what)}}));
}

std::string miss_reason(const CacheRequest& o, const EntryStore& store, const Lookup& found, const Inputs& inputs,
                        const Manifest& now) {
  if (o.cache.force) return "--force rebuilds it";
  switch (found.state) {
  case LookupState::corrupt: return "its entry is corrupt";
  case LookupState::unreadable: return "the store could not be read";
  case LookupState::found:
    return "expired (age " + age_of(found.entry.header) + "s, --max-age " +
           format_seconds(o.cache.max_age.value_or(Nanos(0))) + "s)";
  case LookupState::missing: break;
  }
  return missing_reason(o, store, inputs, now);
}

void explain_miss(const CacheRequest& o, const EntryStore& store, const Lookup& found, const Inputs& inputs,
                  const Manifest& now) {
  if (!explaining(o)) return;
  say(message(Msg::cache_explain_miss,
              {{"key", display_key(o.key)}, {"why", miss_reason(o, store, found, inputs, now)}}));
}

} // namespace bufferlock
