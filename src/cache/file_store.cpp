#include "cache/file_store.hpp"

#include "cache/inputs.hpp"
#include "cache/streamed_build.hpp"
#include "messages.hpp"
#include "run/command.hpp"
#include "util/clock.hpp"
#include "util/io.hpp"
#include "util/md5.hpp"
#include "util/random.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <map>
#include <vector>

namespace bufferlock {

namespace {

// Whether `path` still names the file open as `fd`.
bool names_same_file(const std::string& path, int fd) { return names_open_file(AT_FDCWD, path, fd); }

// An entry file opened and its header decoded, its payload not read.
struct HeadOnly {
  UniqueFd fd;
  std::uint64_t size = 0;
  std::int64_t last_used_ns = 0;     // its access time
  std::optional<EntryHeader> header; // nullopt: not an entry (or not one of this size)
};

// Opens `path` (no symbolic link) to read it without moving its access
// time, which is the entry's last use (SPEC §22): --list, --gc and a waiter's
// peek are no use. O_NOATIME is the owner's alone; others read plainly.
UniqueFd open_unused(const std::string& path) {
  constexpr int flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
  UniqueFd fd(::open(path.c_str(), flags | O_NOATIME));
  if (!fd && errno == EPERM) fd.reset(::open(path.c_str(), flags));
  return fd;
}

std::int64_t atime_ns(const struct stat& st) {
  return static_cast<std::int64_t>(st.st_atim.tv_sec) * 1'000'000'000 + st.st_atim.tv_nsec;
}

// Opens `path` (no symbolic link, a regular file) and decodes its header;
// nullopt when it cannot be opened or read.
std::optional<HeadOnly> read_header_of(const std::string& path) {
  HeadOnly h;
  h.fd = open_unused(path);
  struct stat st {};
  if (!h.fd || ::fstat(h.fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  h.size = static_cast<std::uint64_t>(st.st_size);
  h.last_used_ns = atime_ns(st);
  std::string head, why;
  if (!read_entry_head(h.fd.get(), h.size, head)) return std::nullopt;
  h.header = decode_header(head, why);
  if (h.header && h.header->file_size() != h.size) h.header.reset();
  return h;
}

// The names in `dir` that `keep` keeps.
std::vector<std::string> names_in(const std::string& dir,
                                  bool (*keep)(std::string_view name, std::string_view stem),
                                  std::string_view stem = {}) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return names;
  while (const dirent* ent = ::readdir(d))
    if (std::string_view name = ent->d_name; keep(name, stem)) names.emplace_back(name);
  ::closedir(d);
  return names;
}

// What --list, --gc and its --max-size take for entry files: any *.entry
// (one that is no entry is corrupt).
bool entry_file(std::string_view name, std::string_view) {
  return name.size() > 6 && name.ends_with(".entry");
}
bool temp_file(std::string_view name, std::string_view) { return name.starts_with(".tmp-"); }
bool entry_or_temp_file(std::string_view name, std::string_view) {
  return entry_file(name, {}) || temp_file(name, {});
}

// The names of the entry files in `dir` (*.entry).
std::vector<std::string> entry_file_names(const std::string& dir) { return names_in(dir, entry_file); }

// Unlinks `path` only if it is still the file open as `fd` (it may have been
// replaced by a newer entry since we looked).
void unlink_if_same(const std::string& path, int fd) {
  if (names_same_file(path, fd)) ::unlink(path.c_str());
}

// Creates a build's temporary file in `dir` and locks it (LOCK_EX), which
// tells --gc that its builder is alive. Between our open and our flock the
// file is visible and unlocked: a --gc in that moment takes it for a dead
// builder's and removes it. So once locked we check that the name is still
// ours, and start again under a new name if it is not. The flock blocks: a
// --gc holds a temporary file's lock only while it decides.
std::optional<SysError> create_locked_temp(const std::string& dir, const std::string& digest, UniqueFd& fd,
                                           std::string& path) {
  constexpr int attempts = 8; // each retry needs a --gc racing us again
  const std::string prefix = dir + "/.tmp-" + digest + "-" + std::to_string(::getpid()) + "-";
  for (int i = 0; i < attempts; ++i) {
    path = prefix + random_token().substr(0, 8);
    fd.reset(::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666));
    if (!fd) return SysError{path, errno_text(errno)};
    int rc = 0;
    while ((rc = ::flock(fd.get(), LOCK_EX)) != 0 && errno == EINTR) {
    }
    // A file system without flock: --gc cannot lock the file either, so it
    // never removes it.
    if (rc != 0 || names_same_file(path, fd.get())) return std::nullopt;
  }
  fd.reset();
  return SysError{path, errno_text(ENOENT)};
}

} // namespace

// It is never unreadable, nor fails to list.
constexpr StoreMessages file_messages{Msg::cache_entry_corrupt, Msg::cache_redis_read_failed,
                                      Msg::cache_store_failed,  Msg::cache_redis_list_failed,
                                      Msg::cache_drop_failed,   Msg::cache_http_cannot_list};

CacheStore::CacheStore(std::string dir) : EntryStore(file_messages), dir_(std::move(dir)) {}

std::optional<SysError> CacheStore::prepare() const {
  if (::mkdir(dir_.c_str(), 0700) == 0) return std::nullopt;
  if (errno == ENOENT) {
    if (auto e = make_dirs(parent_dir(dir_), 0777)) return e;
    if (::mkdir(dir_.c_str(), 0700) == 0 || errno == EEXIST) return std::nullopt;
    return SysError{dir_, errno_text(errno)};
  }
  if (errno != EEXIST) return SysError{dir_, errno_text(errno)};
  struct stat st {};
  if (::stat(dir_.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return SysError{dir_, errno_text(ENOTDIR)};
  // There but read-only (a mount, its mode): nothing can be stored in it.
  if (::faccessat(AT_FDCWD, dir_.c_str(), W_OK | X_OK, AT_EACCESS) != 0)
    return SysError{dir_, errno_text(errno)};
  return std::nullopt;
}

std::string CacheStore::entry_path(std::string_view key, const Inputs& inputs) const {
  return dir_ + "/" + entry_file_name(key, inputs);
}

Lookup CacheStore::lookup(std::string_view key, const Inputs& address) const {
  const std::string path = entry_path(key, address);
  // Read without moving its access time: record_use alone sets it (once a
  // minute, never for --read-only).
  UniqueFd fd = open_unused(path);
  if (!fd) {
    if (errno == ENOENT || errno == ENOTDIR) return {LookupState::missing, {}, {}};
    return {LookupState::corrupt, {}, errno == ELOOP ? "it is a symbolic link" : errno_text(errno)};
  }
  std::string why;
  const std::string wanted(key);
  std::string bytes;
  auto header = verify_entry(fd.get(), &wanted, why, &bytes, signer_);
  if (!header) {
    // Another key whose MD5 collides is simply not ours: a miss, no warning.
    if (why == "it belongs to another key") return {LookupState::missing, {}, {}};
    return {LookupState::corrupt, {}, why};
  }
  // Other inputs or outputs (a file renamed by hand), or a version 2 entry
  // whose dependency stamps cannot be compared with a digest: not this entry.
  if (!header->filed_at(address)) return {LookupState::missing, {}, {}};
  return {LookupState::found, CachedEntry{std::move(fd), std::move(*header), std::move(bytes)}, {}};
}

Lookup CacheStore::peek(std::string_view key, const Inputs& address) const {
  auto h = read_header_of(entry_path(key, address));
  if (!h || !h->header || h->header->key != key || !h->header->filed_at(address))
    return {LookupState::missing, {}, {}};
  return {LookupState::found, CachedEntry{{}, std::move(*h->header), {}}, {}};
}

std::vector<std::string> CacheStore::names_of(std::string_view key) const {
  return names_in(dir_, is_entry_file_name, md5_hex(key));
}

EntryStore::Headers CacheStore::headers_of(std::string_view key) const {
  std::vector<StaleCandidate> found;
  for (auto& name : names_of(key)) {
    auto h = read_header_of(dir_ + "/" + name);
    if (h && h->header) found.push_back({std::move(*h->header), std::move(name)});
  }
  return found;
}

Lookup CacheStore::read_candidate(std::string_view key, const StaleCandidate& c) const {
  UniqueFd fd = open_unused(dir_ + "/" + c.name);
  std::string why, bytes;
  if (!fd) return {LookupState::missing, {}, {}};
  const std::string wanted(key);
  if (auto header = verify_entry(fd.get(), &wanted, why, &bytes, signer_))
    return {LookupState::found, CachedEntry{std::move(fd), std::move(*header), std::move(bytes)}, {}};
  return {LookupState::corrupt, {}, dir_ + "/" + c.name + ": " + why};
}

std::optional<SysError> CacheStore::drop(std::string_view key) const {
  for (const auto& name : names_of(key)) {
    const std::string path = dir_ + "/" + name;
    // -v names what goes: its header read first.
    const auto h = diag::verbose() ? read_header_of(path) : std::nullopt;
    if (::unlink(path.c_str()) != 0) {
      if (errno == ENOENT) continue;
      return SysError{path, errno_text(errno)};
    }
    if (h) say_removed(h->header ? &*h->header : nullptr, path, h->size, "dropped");
  }
  // A directory that cannot be read: say so, rather than "nothing to drop".
  if (::access(dir_.c_str(), F_OK) == 0 && ::access(dir_.c_str(), R_OK | X_OK) != 0)
    return SysError{dir_, errno_text(errno)};
  return std::nullopt;
}

void CacheStore::record_use(const CachedEntry& e) const {
  // The file's access time is its last use: set explicitly, whatever the
  // mount's atime option (not on a read-only mount: then it stays unset).
  struct stat st {};
  if (!e.fd || ::fstat(e.fd.get(), &st) != 0 || !use_worth_recording(atime_ns(st), wall_clock_ns())) return;
  const timespec times[2] = {{0, UTIME_NOW}, {0, UTIME_OMIT}};
  ::futimens(e.fd.get(), times);
}

GcCounts CacheStore::gc(std::optional<Nanos> max_age, std::int64_t now_ns) const {
  return sweep(max_age, now_ns, nullptr);
}

GcCounts CacheStore::sweep(std::optional<Nanos> max_age, std::int64_t now_ns, Weighed* kept) const {
  GcCounts counts;
  for (const auto& name : names_in(dir_, entry_or_temp_file)) {
    const std::string path = dir_ + "/" + name;
    UniqueFd fd = open_unused(path);
    if (!fd) continue;
    if (temp_file(name, {})) {
      // The builder holds LOCK_EX on its temporary file until it is done
      // (and retries if we remove it before it could lock it: create_locked_temp).
      if (::flock(fd.get(), LOCK_EX | LOCK_NB) == 0) {
        unlink_if_same(path, fd.get());
        ++counts.temps_removed;
        say_removed(nullptr, path, 0, "leftover of a build that ended");
      }
      continue;
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) continue;
    const auto size = static_cast<std::uint64_t>(st.st_size);
    std::string why;
    auto h = verify_entry(fd.get(), nullptr, why);
    if (!h || (max_age && freshness(h->created_ns, now_ns, max_age, std::nullopt) == Freshness::expired)) {
      unlink_if_same(path, fd.get());
      ++counts.entries_removed;
      if (h)
        say_removed(&*h, path, size, "expired");
      else
        say_removed(nullptr, path, 0, "corrupt: " + why);
      continue;
    }
    if (kept) kept->emplace_back(WeighedEntry{name, size, atime_ns(st)}, std::move(*h));
  }
  return counts;
}

std::variant<GcCounts, SysError> CacheStore::gc(const GcPolicy& policy) const {
  Weighed kept;
  GcCounts c = sweep(policy.max_age, policy.now_ns, &kept);
  diag::debug_lazy([&] {
    return message(Msg::cache_gc_done, {{"entries", std::to_string(c.entries_removed)},
                                        {"temps", std::to_string(c.temps_removed)},
                                        {"path", dir_}});
  });
  if (!policy.max_size && !policy.max_unused) return c;
  std::map<std::string, std::pair<const EntryHeader*, std::uint64_t>> seen; // for -v
  std::vector<WeighedEntry> entries;
  for (const auto& [w, h] : kept) {
    seen.emplace(w.name, std::pair(&h, w.stored));
    entries.push_back(w);
  }
  int removed = 0;
  const std::vector<Removal> removals = by_use(std::move(entries), policy);
  for (const Removal& r : removals) {
    const std::string path = dir_ + "/" + r.name;
    if (::unlink(path.c_str()) != 0) continue;
    ++removed;
    const auto& [h, size] = seen[r.name];
    say_removed(h, path, size, r.why);
  }
  if (policy.max_size)
    diag::debug_lazy([&] {
      return message(
          Msg::cache_gc_trimmed,
          {{"entries", std::to_string(removed)}, {"path", dir_}, {"size", std::to_string(*policy.max_size)}});
    });
  c.entries_removed += removed;
  return c;
}

std::vector<ListedEntry> CacheStore::list() const {
  std::vector<ListedEntry> out;
  for (const auto& name : entry_file_names(dir_)) {
    // The header and the size only: listing must not read every payload.
    const auto h = read_header_of(dir_ + "/" + name);
    if (!h || !h->header) continue;
    out.push_back(listed_entry(*h->header, h->size));
  }
  return out;
}

namespace {

// The file store's build: its parts written to a temporary file of the
// cache directory behind the header's place (the header is the same size
// once complete), then the header, the trailer, and a rename(2) into
// place: readers see the old entry or the whole new one.
class FileBuild final : public StreamedBuild {
public:
  FileBuild(const CacheStore& store, std::string_view key, const Inputs& inputs, std::int64_t created_ns,
            const BuildContents& what)
      : StreamedBuild(store, key, inputs, created_ns, what, entry_small_read), dir_(store.dir()),
        final_path_(store.entry_path(key, entry_address(inputs, what.outputs))) {}
  ~FileBuild() override {
    if (fd_ && !published()) ::unlink(temp_path_.c_str());
  }

  // Creates the temporary file, locked: the lock marks the build as running
  // for --gc (released when the descriptor closes).
  std::optional<SysError> start() override {
    if (auto e = create_locked_temp(dir_, md5_hex(header().key), fd_, temp_path_)) return e;
    if (auto e = StreamedBuild::start()) {
      drop_temp();
      return e;
    }
    if (!write_all(fd_.get(), encode_header(header()))) return failed(errno);
    return std::nullopt;
  }

  std::optional<CachedEntry> entry() override { return CachedEntry{std::move(fd_), header(), {}}; }

private:
  bool send_part(std::string& part) override {
    if (write_all(fd_.get(), part.data(), part.size())) return true;
    fail(*failed(errno));
    return false;
  }

  std::optional<SysError> finish(std::string& last_part, const std::string& head,
                                 const std::string& trailer) override {
    if (!write_all(fd_.get(), last_part.data(), last_part.size()) ||
        ::pwrite(fd_.get(), head.data(), head.size(), 0) != static_cast<ssize_t>(head.size()) ||
        !write_all(fd_.get(), trailer.data(), trailer.size()))
      return failed(errno);
    if (stop_signal() != 0) return failed(EINTR); // abandoned before it is visible: the caller exits 128+N
    if (::rename(temp_path_.c_str(), final_path_.c_str()) != 0) {
      const int err = errno;
      drop_temp();
      return SysError{final_path_, errno_text(err)};
    }
    return std::nullopt;
  }

  // Past --max-entry the temporary file goes at once: a large output must
  // not fill the disk only to be thrown away.
  void abandon() override { drop_temp(); }

  // stderr waits in an unnamed file of the cache directory (so on the same disk).
  UniqueFd hold_file(std::string& name) override {
    name = dir_;
    return UniqueFd(::open(dir_.c_str(), O_RDWR | O_TMPFILE | O_CLOEXEC, 0600));
  }

  void drop_temp() {
    ::unlink(temp_path_.c_str());
    fd_.reset();
  }
  // The temporary file's error `err`, the file gone.
  std::optional<SysError> failed(int err) {
    drop_temp();
    return SysError{temp_path_, errno_text(err)};
  }

  std::string dir_;
  std::string final_path_;
  std::string temp_path_;
  UniqueFd fd_;
};

} // namespace

std::variant<EntryWriter, SysError> EntryWriter::create(const CacheStore& store, std::string_view key,
                                                        std::int64_t created_ns, const Inputs& inputs,
                                                        const BuildContents& what) {
  auto b = store.begin_build(key, inputs, created_ns, what);
  if (auto* e = std::get_if<SysError>(&b)) return *e;
  return EntryWriter(std::move(std::get<std::unique_ptr<EntryBuild>>(b)));
}

BuildOrError CacheStore::begin_build(std::string_view key, const Inputs& inputs, std::int64_t created_ns,
                                     const BuildContents& what) const {
  return start_build<FileBuild>(*this, key, inputs, created_ns, what);
}

} // namespace bufferlock
