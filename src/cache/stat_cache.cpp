#include "cache/stat_cache.hpp"

#include "util/clock.hpp"
#include "util/fd.hpp"
#include "util/io.hpp"
#include "util/le.hpp"
#include "util/random.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <tuple>

namespace bufferlock {

namespace {

std::int64_t ns_of(const timespec& t) { return t.tv_sec * 1'000'000'000LL + t.tv_nsec; }

bool before(const StatRecord& a, const StatRecord& b) {
  return std::tie(a.dev, a.ino) < std::tie(b.dev, b.ino);
}

std::string encode_record(const StatRecord& r) {
  std::string out;
  out.reserve(stat_record_size);
  put_le<std::uint64_t>(out, r.dev);
  put_le<std::uint64_t>(out, r.ino);
  put_le<std::uint64_t>(out, r.size);
  put_le<std::int64_t>(out, r.mtime_ns);
  put_le<std::int64_t>(out, r.ctime_ns);
  put_le<std::int64_t>(out, r.recorded_ns);
  put_le<std::uint64_t>(out, r.digest.high);
  put_le<std::uint64_t>(out, r.digest.low);
  put_le<std::uint64_t>(out, checksum(out));
  return out;
}

// A file larger than this is not a stat cache of ours.
constexpr std::size_t max_file = stat_cache_header + stat_cache_max_records * stat_record_size;

} // namespace

StatRecord stat_record(const struct stat& st) {
  StatRecord r;
  r.dev = static_cast<std::uint64_t>(st.st_dev);
  r.ino = static_cast<std::uint64_t>(st.st_ino);
  r.size = static_cast<std::uint64_t>(st.st_size);
  r.mtime_ns = ns_of(st.st_mtim);
  r.ctime_ns = ns_of(st.st_ctim);
  return r;
}

bool record_trusted(const StatRecord& r) {
  const std::int64_t newest = std::max(r.mtime_ns, r.ctime_ns);
  std::int64_t limit = 0;
  if (__builtin_add_overflow(newest, racy_window.count(), &limit)) return false;
  return limit < r.recorded_ns;
}

// Whether `bytes` has the shape of a stat cache file (records not checked).
bool well_formed(std::string_view bytes) {
  if (bytes.size() < stat_cache_header || bytes.substr(0, stat_cache_magic.size()) != stat_cache_magic ||
      get_le<std::uint32_t>(bytes, 8) != stat_cache_version)
    return false;
  const std::uint64_t count = get_le<std::uint32_t>(bytes, 12);
  return count <= stat_cache_max_records && bytes.size() == stat_cache_header + count * stat_record_size;
}

// The record `rec` (stat_record_size bytes), when its checksum matches.
std::optional<StatRecord> decode_record(std::string_view rec) {
  if (checksum(rec.substr(0, 64)) != get_le<std::uint64_t>(rec, 64)) return std::nullopt;
  StatRecord r;
  r.dev = get_le<std::uint64_t>(rec, 0);
  r.ino = get_le<std::uint64_t>(rec, 8);
  r.size = get_le<std::uint64_t>(rec, 16);
  r.mtime_ns = get_le<std::int64_t>(rec, 24);
  r.ctime_ns = get_le<std::int64_t>(rec, 32);
  r.recorded_ns = get_le<std::int64_t>(rec, 40);
  r.digest = {get_le<std::uint64_t>(rec, 48), get_le<std::uint64_t>(rec, 56)};
  return r;
}

std::vector<StatRecord> decode_stat_cache(std::string_view bytes) {
  std::vector<StatRecord> out;
  if (!well_formed(bytes)) return out;
  out.reserve((bytes.size() - stat_cache_header) / stat_record_size);
  for (std::size_t at = stat_cache_header; at < bytes.size(); at += stat_record_size) {
    const auto r = decode_record(bytes.substr(at, stat_record_size));
    if (!r) continue;
    // Out of order (or a duplicate): the binary search could not find it,
    // and nothing we wrote looks so.
    if (!out.empty() && !before(out.back(), *r)) return {};
    if (record_trusted(*r)) out.push_back(*r);
  }
  return out;
}

std::string encode_stat_cache(const std::vector<StatRecord>& sorted) {
  std::string out(stat_cache_magic);
  put_le<std::uint32_t>(out, stat_cache_version);
  put_le<std::uint32_t>(out, static_cast<std::uint32_t>(sorted.size()));
  out.reserve(stat_cache_header + sorted.size() * stat_record_size);
  for (const auto& r : sorted)
    out += encode_record(r);
  return out;
}

StatCache::StatCache(std::string dir)
    : dir_(std::move(dir)), path_(dir_ + "/stat-cache." + std::to_string(::geteuid())) {}

void StatCache::load() {
  loaded_ = true;
  UniqueFd fd(::open(path_.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0) return;
  // Only our own file, which nobody else could have written.
  if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 022) != 0) return;
  const auto size = static_cast<std::size_t>(st.st_size);
  if (size > max_file) return;
  std::string bytes(size, '\0');
  if (!pread_all(fd.get(), bytes.data(), size, 0) || !well_formed(bytes)) return;
  raw_ = std::move(bytes);
}

std::optional<Digest128> StatCache::find(const struct stat& st) {
  if (!loaded_) load();
  // A binary search on the file's bytes: a hit decodes and checks one
  // record, not all of them (the file holds every input the user hashed).
  const StatRecord want = stat_record(st);
  const std::string_view all(raw_);
  std::size_t lo = 0, hi = all.empty() ? 0 : (all.size() - stat_cache_header) / stat_record_size;
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    const std::size_t at = stat_cache_header + mid * stat_record_size;
    const StatRecord key{get_le<std::uint64_t>(all, at), get_le<std::uint64_t>(all, at + 8), 0, 0, 0, 0, {}};
    if (before(key, want)) {
      lo = mid + 1;
    } else if (before(want, key)) {
      hi = mid;
    } else {
      const auto r = decode_record(all.substr(at, stat_record_size));
      if (!r || !record_trusted(*r) || r->size != want.size || r->mtime_ns != want.mtime_ns ||
          r->ctime_ns != want.ctime_ns)
        return std::nullopt;
      return r->digest;
    }
  }
  return std::nullopt;
}

void StatCache::remember(const struct stat& st, std::int64_t began_ns, const Digest128& digest) {
  StatRecord r = stat_record(st);
  r.recorded_ns = began_ns;
  r.digest = digest;
  // A racy record would never be trusted: read the file again next time.
  if (record_trusted(r)) added_.push_back(r);
}

bool StatCache::save() {
  if (added_.empty()) return true;
  if (!loaded_) load();
  // Newest record wins for a (dev, ino); past the cap, the oldest go.
  std::vector<StatRecord> all = std::move(added_);
  added_.clear();
  const std::vector<StatRecord> old = decode_stat_cache(raw_);
  all.insert(all.end(), old.begin(), old.end());
  std::stable_sort(all.begin(), all.end(), before);
  all.erase(
      std::unique(all.begin(), all.end(),
                  [](const StatRecord& a, const StatRecord& b) { return a.dev == b.dev && a.ino == b.ino; }),
      all.end());
  if (all.size() > stat_cache_max_records) {
    std::nth_element(all.begin(), all.begin() + stat_cache_max_records, all.end(),
                     [](const StatRecord& a, const StatRecord& b) { return a.recorded_ns > b.recorded_ns; });
    all.resize(stat_cache_max_records);
    std::sort(all.begin(), all.end(), before);
  }
  raw_ = encode_stat_cache(all);
  const std::string& bytes = raw_;
  // Named like a build's temporary file, and locked the same way, so that
  // --gc removes it when its writer died before the rename.
  const std::string temp = dir_ + "/.tmp-stat-cache-" + std::to_string(::getpid()) + "-" +
                           random_token().substr(0, 8);
  UniqueFd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) return false;
  ::flock(fd.get(), LOCK_EX | LOCK_NB);
  if (!write_all(fd.get(), bytes) || ::rename(temp.c_str(), path_.c_str()) != 0) {
    ::unlink(temp.c_str());
    return false;
  }
  return true;
}

} // namespace bufferlock
