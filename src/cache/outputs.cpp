#include "cache/outputs.hpp"

#include "cache/compress.hpp"
#include "run/command.hpp"
#include "util/dynlib.hpp"
#include "util/files.hpp"
#include "util/fd.hpp"
#include "util/io.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <string_view>

namespace bufferlock {

namespace {

// Debian's libarchive13; declared by its headers, never linked.
constexpr const char* libarchive_name = "libarchive.so.13";
constexpr std::size_t io_block = 256 * 1024;
// libarchive's own default for its zstd filter, which wrote the archives
// before: the same sizes stored.
constexpr int archive_zstd_level = 3;

// The libarchive functions we call, resolved once by dlsym().
#define LIBARCHIVE_FUNCTIONS(X)                                                                              \
  X(archive_error_string)                                                                                    \
  X(archive_write_new)                                                                                       \
  X(archive_write_set_format_pax)                                                                            \
  X(archive_write_set_format_option)                                                                         \
  X(archive_write_set_bytes_per_block)                                                                       \
  X(archive_write_open)                                                                                      \
  X(archive_write_header)                                                                                    \
  X(archive_write_data)                                                                                      \
  X(archive_write_close)                                                                                     \
  X(archive_write_free)                                                                                      \
  X(archive_entry_new)                                                                                       \
  X(archive_entry_free)                                                                                      \
  X(archive_entry_clear)                                                                                     \
  X(archive_entry_set_pathname)                                                                              \
  X(archive_entry_set_filetype)                                                                              \
  X(archive_entry_set_perm)                                                                                  \
  X(archive_entry_set_size)                                                                                  \
  X(archive_entry_set_mtime)                                                                                 \
  X(archive_entry_set_symlink)                                                                               \
  X(archive_read_new)                                                                                        \
  X(archive_read_support_format_tar)                                                                         \
  X(archive_read_support_filter_zstd)                                                                        \
  X(archive_read_open)                                                                                       \
  X(archive_read_next_header)                                                                                \
  X(archive_read_data_block)                                                                                 \
  X(archive_read_free)                                                                                       \
  X(archive_entry_pathname)                                                                                  \
  X(archive_entry_filetype)                                                                                  \
  X(archive_entry_perm)                                                                                      \
  X(archive_entry_mtime)                                                                                     \
  X(archive_entry_mtime_nsec)                                                                                \
  X(archive_entry_symlink)                                                                                   \
  X(archive_entry_hardlink)                                                                                  \
  X(archive_entry_size)

struct Api {
  LIBARCHIVE_FUNCTIONS(BUFFERLOCK_DYNLIB_FIELD)
};

const DynLib<Api>& library() {
  static const DynLib<Api> lib =
      load_library<Api>({libarchive_name}, LIBARCHIVE_FUNCTIONS(BUFFERLOCK_DYNLIB_NAME),
                        {LIBARCHIVE_FUNCTIONS(BUFFERLOCK_DYNLIB_OFFSET)});
  return lib;
}

const Api& api() { return library().api; }

std::string archive_reason(archive* a) {
  const char* why = api().archive_error_string(a);
  return why ? why : "libarchive failed";
}

// A PATH without its trailing slashes ("dist/" is "dist").
std::string trimmed(std::string p) {
  while (p.size() > 1 && p.back() == '/')
    p.pop_back();
  return p;
}

// The last component of `path` (trimmed).
std::string base_name(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// --- packing -------------------------------------------------------------------

class Packer {
public:
  Packer(archive* a, archive_entry* e) : a_(a), e_(e) {}

  // Adds `path` (on disk) as member `name`, and what it holds.
  std::optional<std::string> add(const std::string& path, const std::string& name) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) return path + ": " + errno_text(errno);
    api().archive_entry_clear(e_);
    api().archive_entry_set_pathname(e_, name.c_str());
    api().archive_entry_set_perm(e_, st.st_mode & 07777);
    api().archive_entry_set_mtime(e_, st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
    if (S_ISLNK(st.st_mode)) return add_symlink(path, st);
    if (S_ISREG(st.st_mode)) return add_file(path);
    if (S_ISDIR(st.st_mode)) return add_dir(path, name);
    return std::nullopt; // sockets, FIFOs, devices: not stored
  }

private:
  std::optional<std::string> header(const std::string& path) {
    if (api().archive_write_header(a_, e_) < ARCHIVE_WARN) return path + ": " + archive_reason(a_);
    return std::nullopt;
  }

  std::optional<std::string> add_symlink(const std::string& path, const struct stat& st) {
    std::string target(static_cast<std::size_t>(st.st_size) + 1, '\0');
    const ssize_t n = ::readlink(path.c_str(), target.data(), target.size());
    if (n < 0) return path + ": " + errno_text(errno);
    target.resize(static_cast<std::size_t>(n));
    api().archive_entry_set_filetype(e_, AE_IFLNK);
    api().archive_entry_set_symlink(e_, target.c_str());
    return header(path);
  }

  std::optional<std::string> add_file(const std::string& path) {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY));
    struct stat st {};
    if (!fd || ::fstat(fd.get(), &st) != 0) return path + ": " + errno_text(errno);
    api().archive_entry_set_filetype(e_, AE_IFREG);
    api().archive_entry_set_size(e_, st.st_size);
    if (auto e = header(path)) return e;
    buf_.resize(io_block);
    for (off_t left = st.st_size; left > 0;) {
      if (stop_signal() != 0) return std::string(stopped_by_signal);
      const ssize_t n = ::read(fd.get(), buf_.data(), std::min<off_t>(left, io_block));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return path + ": " + errno_text(errno);
      if (n == 0) return path + ": it shrank while it was stored";
      if (api().archive_write_data(a_, buf_.data(), static_cast<std::size_t>(n)) < 0)
        return path + ": " + archive_reason(a_);
      left -= n;
    }
    return std::nullopt;
  }

  std::optional<std::string> add_dir(const std::string& path, const std::string& name) {
    api().archive_entry_set_filetype(e_, AE_IFDIR);
    if (auto e = header(path)) return e;
    DIR* d = ::opendir(path.c_str());
    if (!d) return path + ": " + errno_text(errno);
    std::vector<std::string> names;
    while (const dirent* ent = ::readdir(d)) {
      const std::string_view n = ent->d_name;
      if (n != "." && n != "..") names.emplace_back(n);
    }
    ::closedir(d);
    std::sort(names.begin(), names.end()); // the same tree, the same archive
    const auto child = [](std::string parent, const std::string& n) { return parent.append(1, '/').append(n); };
    for (const auto& n : names)
      if (auto e = add(child(path, n), child(name, n))) return e;
    return std::nullopt;
  }

  archive* a_;
  archive_entry* e_;
  std::vector<char> buf_;
};

// Where libarchive writes the plain tar: the zstd frame, when the tar's
// start shrinks at all, is ours, so that incompressible files cost no zstd
// pass. Not moved once made (its compressor calls it back).
class ArchiveOut {
public:
  explicit ArchiveOut(const OutputsSink& sink)
      : sink_(sink), z_([this](const char* d, std::size_t n) { return pass(d, n); }, archive_zstd_level) {}
  ArchiveOut(const ArchiveOut&) = delete;
  ArchiveOut& operator=(const ArchiveOut&) = delete;

  static la_ssize_t write(archive*, void* self, const void* data, std::size_t len) {
    auto* o = static_cast<ArchiveOut*>(self);
    if (o->z_.write(static_cast<const char*>(data), len)) return static_cast<la_ssize_t>(len);
    o->failed_ = true;
    return -1;
  }
  void finish() { failed_ = failed_ || !z_.finish(); }
  bool failed() const { return failed_; }
  // Why it failed: nothing when the sink refused (its own error says why).
  std::optional<std::string> why() const {
    if (sink_refused_) return std::nullopt;
    return std::string("zstd could not compress the archive");
  }

private:
  bool pass(const char* data, std::size_t len) {
    sink_refused_ = !sink_(data, len);
    return !sink_refused_;
  }

  const OutputsSink& sink_;
  FrameCompressor z_;
  bool failed_ = false;
  bool sink_refused_ = false;
};

// --- restoring -----------------------------------------------------------------

// Hands an ArchiveSource's bytes to libarchive.
la_ssize_t pull(archive*, void* self, const void** out) {
  const char* data = nullptr;
  std::size_t len = 0;
  if (!(*static_cast<const ArchiveSource*>(self))(data, len)) return -1;
  *out = data;
  return static_cast<la_ssize_t>(len);
}

// Removes `name` in `dirfd` and all it holds, never following a symbolic link.
void remove_tree(int dirfd, const char* name) {
  struct stat st {};
  if (::fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return;
  if (!S_ISDIR(st.st_mode)) {
    ::unlinkat(dirfd, name, 0);
    return;
  }
  const int fd = ::openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  ::fchmod(fd, 0700); // a read-only directory of the old tree
  DIR* d = ::fdopendir(fd);
  if (!d) {
    ::close(fd);
    return;
  }
  std::vector<std::string> names;
  while (const dirent* ent = ::readdir(d)) {
    const std::string_view n = ent->d_name;
    if (n != "." && n != "..") names.emplace_back(n);
  }
  for (const auto& n : names)
    remove_tree(::dirfd(d), n.c_str());
  ::closedir(d);
  ::unlinkat(dirfd, name, AT_REMOVEDIR);
}

// The name of the restored tree inside an output's temporary directory.
constexpr const char* staged = "new";
// Beside PATH: ".BASE" + this + six characters of mkdtemp, a restore's
// temporary directory, or + "old", the tree the last restore replaced.
constexpr std::string_view sibling_infix = ".bufferlock-";
constexpr std::size_t temp_name_tail = 6;
// The name the replaced tree moves to inside the temporary directory, on
// its way out, when an older one is kept beside PATH already.
constexpr const char* previous = "previous";

std::string kept_name(const std::string& base) { return "." + base + std::string(sibling_infix) + "old"; }

// Whether `name` is a restore's temporary directory for `base`.
bool is_temp_of(std::string_view name, const std::string& base) {
  const std::size_t head = 1 + base.size() + sibling_infix.size();
  if (name.size() != head + temp_name_tail || name[0] != '.' || name.substr(1, base.size()) != base ||
      name.substr(1 + base.size(), sibling_infix.size()) != sibling_infix)
    return false;
  const std::string_view tail = name.substr(head);
  return std::all_of(tail.begin(), tail.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  });
}

// Removes the temporary directories beside PATH (`base` in `parent`) of
// restores that ended before their end (SIGKILL, a crash). A restore under
// way holds a lock on its directory (flock), which its end drops: a
// directory that can be locked has no restore left, and one still locked
// is never touched.
void remove_abandoned(int parent, const std::string& base) {
  const int scan = ::dup(parent);
  DIR* d = scan < 0 ? nullptr : ::fdopendir(scan);
  if (!d) {
    if (scan >= 0) ::close(scan);
    return;
  }
  std::vector<std::string> names;
  while (const dirent* ent = ::readdir(d))
    if (is_temp_of(ent->d_name, base)) names.emplace_back(ent->d_name);
  ::closedir(d);
  for (const auto& n : names) {
    UniqueFd fd(::openat(parent, n.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd || ::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) continue;
    if (names_open_file(parent, n, fd.get())) remove_tree(parent, n.c_str());
  }
}

// A new temporary directory beside PATH, locked (see remove_abandoned). A
// restore that sweeps between our mkdtemp and our flock takes it for
// abandoned and may remove it: once locked, the name must still be ours,
// else again under a new name.
std::optional<std::string> make_locked_temp(const std::string& parent, const std::string& base, std::string& path,
                                            UniqueFd& fd) {
  constexpr int attempts = 8; // each retry needs another restore sweeping just then
  for (int i = 0; i < attempts; ++i) {
    path = parent;
    path.append("/.").append(base).append(sibling_infix).append("XXXXXX");
    if (!::mkdtemp(path.data())) return parent + ": " + errno_text(errno);
    fd.reset(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd && errno == ENOENT) continue; // swept already
    if (!fd) return path + ": " + errno_text(errno);
    int rc = 0;
    while ((rc = ::flock(fd.get(), LOCK_EX)) != 0 && errno == EINTR) {
    }
    // A file system without flock: nobody can lock it, so nobody removes it.
    if (rc != 0 || names_open_file(AT_FDCWD, path, fd.get())) return std::nullopt;
  }
  fd.reset();
  return parent + ": " + errno_text(ENOENT);
}

// One PATH being restored.
struct Target {
  std::string path;   // as given, trimmed
  std::string parent; // its directory
  std::string base;   // its last component
  std::string temp;   // the temporary directory beside it ("" until made)
  UniqueFd temp_fd;
  bool root_seen = false;
};

// A directory whose mode and mtime are set once its contents are in place.
struct DirMeta {
  std::size_t target;
  std::vector<std::string> components; // below the staged root
  mode_t perm;
  timespec mtime;
};

} // namespace

class Restorer {
public:
  explicit Restorer(const std::vector<std::string>& paths) {
    for (const auto& p : paths) {
      Target t;
      t.path = trimmed(p);
      t.parent = parent_dir(t.path);
      t.base = base_name(t.path);
      targets_.push_back(std::move(t));
    }
  }

  ~Restorer() {
    for (auto& t : targets_)
      if (!t.temp.empty()) {
        remove_tree(AT_FDCWD, t.temp.c_str()); // still locked: no sweep races us
        t.temp_fd.reset();
      }
  }

  // Extracts one member; an error refuses the whole archive.
  std::optional<std::string> member(archive* a, archive_entry* e) {
    if (stop_signal() != 0) return std::string(stopped_by_signal);
    const char* raw = api().archive_entry_pathname(e);
    if (!raw) return std::string("a member without a name");
    std::string name = raw;
    const std::string shown = "member '" + name + "'";
    if (api().archive_entry_hardlink(e)) return shown + " is a hard link";
    const mode_t type = api().archive_entry_filetype(e);
    if (type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK)
      return shown + " is not a file, a directory or a symbolic link";
    if (name.starts_with('/')) return shown + " has an absolute name";
    while (type == AE_IFDIR && name.size() > 1 && name.back() == '/')
      name.pop_back();
    std::vector<std::string> parts;
    for (std::size_t at = 0;;) {
      const std::size_t slash = name.find('/', at);
      parts.push_back(name.substr(at, slash == std::string::npos ? std::string::npos : slash - at));
      if (slash == std::string::npos) break;
      at = slash + 1;
    }
    for (const auto& p : parts)
      if (p.empty() || p == "." || p == "..") return shown + " has an empty, '.' or '..' component";
    const auto index = output_index(parts[0]);
    if (!index) return shown + " belongs to no --output PATH";
    Target& t = targets_[*index];
    if (auto e2 = ensure_temp(t)) return e2;
    parts[0] = staged;
    if (parts.size() == 1) {
      if (t.root_seen) return shown + " comes twice";
      t.root_seen = true;
    } else if (!t.root_seen) {
      return shown + " comes before its PATH";
    }
    // Every directory on the way was made by this restore: opened without
    // following links, so a member cannot pass through a symbolic link.
    UniqueFd dir(::dup(t.temp_fd.get()));
    for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
      dir.reset(::openat(dir.get(), parts[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!dir) return shown + (errno == ELOOP || errno == ENOTDIR ? " passes through a symbolic link or a file"
                                                                    : ": " + errno_text(errno));
    }
    const std::string& leaf = parts.back();
    const mode_t perm = api().archive_entry_perm(e) & 0777;
    const timespec mtime{api().archive_entry_mtime(e), api().archive_entry_mtime_nsec(e)};
    if (type == AE_IFDIR) {
      if (::mkdirat(dir.get(), leaf.c_str(), 0700) != 0) return shown + ": " + errno_text(errno);
      dirs_.push_back({*index, {parts.begin() + 1, parts.end()}, perm, mtime});
      return std::nullopt;
    }
    if (type == AE_IFLNK) {
      const char* target = api().archive_entry_symlink(e);
      if (!target || ::symlinkat(target, dir.get(), leaf.c_str()) != 0)
        return shown + ": " + errno_text(target ? errno : EINVAL);
      const timespec times[2] = {mtime, mtime};
      ::utimensat(dir.get(), leaf.c_str(), times, AT_SYMLINK_NOFOLLOW);
      return std::nullopt;
    }
    return file(a, e, dir.get(), leaf, shown, perm, mtime);
  }

  // Sets the directories' modes and mtimes (deepest first), then renames
  // each staged tree over its PATH.
  std::optional<std::string> commit() {
    for (auto& t : targets_)
      if (!t.root_seen) return "the archive has no member for " + t.path;
    std::sort(dirs_.begin(), dirs_.end(),
              [](const DirMeta& a, const DirMeta& b) { return a.components.size() > b.components.size(); });
    for (const auto& d : dirs_) {
      UniqueFd fd(::openat(targets_[d.target].temp_fd.get(), staged, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      for (const auto& c : d.components)
        if (fd) fd.reset(::openat(fd.get(), c.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!fd) return targets_[d.target].path + ": " + errno_text(errno);
      const timespec times[2] = {d.mtime, d.mtime};
      ::fchmod(fd.get(), d.perm);
      ::futimens(fd.get(), times);
    }
    for (auto& t : targets_) {
      UniqueFd parent(::open(t.parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
      if (!parent) return t.parent + ": " + errno_text(errno);
      // Into place in one step: a new PATH, or an exchange with the old one
      // (whatever it is, a symbolic link included: the link itself moves).
      if (::renameat2(t.temp_fd.get(), staged, parent.get(), t.base.c_str(), RENAME_NOREPLACE) != 0) {
        if (errno != EEXIST ||
            ::renameat2(t.temp_fd.get(), staged, parent.get(), t.base.c_str(), RENAME_EXCHANGE) != 0)
          return t.path + ": " + errno_text(errno);
        keep_replaced(t, parent.get());
      }
    }
    return std::nullopt;
  }

private:
  // The tree just replaced (now in the temporary directory) is kept beside
  // PATH until the next restore of PATH, so that a reader that opened it
  // finishes on it whole; the one kept before goes with the temporary
  // directory. A concurrent restore that kept its own first wins: ours goes.
  static void keep_replaced(const Target& t, int parent) {
    const std::string kept = kept_name(t.base);
    ::renameat(parent, kept.c_str(), t.temp_fd.get(), previous);
    ::renameat2(t.temp_fd.get(), staged, parent, kept.c_str(), RENAME_NOREPLACE);
  }

  std::optional<std::size_t> output_index(const std::string& s) const {
    if (s.empty() || s.size() > 6 || (s.size() > 1 && s[0] == '0')) return std::nullopt;
    std::size_t n = 0;
    for (const char c : s) {
      if (c < '0' || c > '9') return std::nullopt;
      n = n * 10 + static_cast<std::size_t>(c - '0');
    }
    if (n >= targets_.size()) return std::nullopt;
    return n;
  }

  std::optional<std::string> ensure_temp(Target& t) {
    if (!t.temp.empty()) return std::nullopt;
    if (auto e = make_dirs(t.parent, 0777)) return e->path + ": " + e->reason;
    UniqueFd parent(::open(t.parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!parent) return t.parent + ": " + errno_text(errno);
    remove_abandoned(parent.get(), t.base);
    std::string name;
    if (auto e = make_locked_temp(t.parent, t.base, name, t.temp_fd)) return e;
    t.temp = std::move(name);
    return std::nullopt;
  }

  std::optional<std::string> file(archive* a, archive_entry* e, int dir, const std::string& leaf,
                                  const std::string& shown, mode_t perm, const timespec& mtime) {
    UniqueFd fd(::openat(dir, leaf.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fd) return shown + ": " + errno_text(errno);
    const void* block = nullptr;
    std::size_t size = 0;
    la_int64_t at = 0;
    for (;;) {
      if (stop_signal() != 0) return std::string(stopped_by_signal);
      const int r = api().archive_read_data_block(a, &block, &size, &at);
      if (r == ARCHIVE_EOF) break;
      if (r < ARCHIVE_WARN) return shown + ": " + archive_reason(a);
      if (at < 0) return shown + ": a negative offset";
      if (size > 0 && !pwrite_all(fd.get(), static_cast<const char*>(block), size, static_cast<off_t>(at)))
        return shown + ": " + errno_text(errno);
    }
    // A sparse file's trailing hole.
    if (::ftruncate(fd.get(), static_cast<off_t>(api().archive_entry_size(e))) != 0)
      return shown + ": " + errno_text(errno);
    const timespec times[2] = {mtime, mtime};
    ::fchmod(fd.get(), perm);
    ::futimens(fd.get(), times);
    return std::nullopt;
  }

  std::vector<Target> targets_;
  std::vector<DirMeta> dirs_;
};

std::optional<std::string> first_missing_output(const std::vector<std::string>& paths) {
  for (const auto& p : paths) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0) return p;
  }
  return std::nullopt;
}

std::optional<std::string> pack_outputs(const std::vector<std::string>& paths, const OutputsSink& sink) {
  if (!library().error.empty()) return library().error;
  ArchiveOut out(sink);
  archive* a = api().archive_write_new();
  archive_entry* e = api().archive_entry_new();
  std::optional<std::string> error;
  // Unblocked: each write goes straight on, and the tar is not padded.
  if (api().archive_write_set_format_pax(a) != ARCHIVE_OK ||
      api().archive_write_set_format_option(a, "pax", "hdrcharset", "BINARY") < ARCHIVE_WARN ||
      api().archive_write_set_bytes_per_block(a, 0) != ARCHIVE_OK ||
      api().archive_write_open(a, &out, nullptr, &ArchiveOut::write, nullptr) != ARCHIVE_OK)
    error = archive_reason(a);
  Packer packer(a, e);
  for (std::size_t i = 0; i < paths.size() && !error; ++i)
    error = packer.add(trimmed(paths[i]), std::to_string(i));
  if (!error && api().archive_write_close(a) != ARCHIVE_OK) error = archive_reason(a);
  if (!error) out.finish();
  api().archive_entry_free(e);
  api().archive_write_free(a);
  if (out.failed()) return out.why();
  return error;
}

StagedOutputs::StagedOutputs(const std::vector<std::string>& paths, const ArchiveSource& source)
    : restorer_(std::make_unique<Restorer>(paths)) {
  if (!library().error.empty()) {
    error_ = library().error;
    return;
  }
  archive* a = api().archive_read_new();
  api().archive_read_support_format_tar(a);
  api().archive_read_support_filter_zstd(a);
  if (api().archive_read_open(a, const_cast<ArchiveSource*>(&source), nullptr, &pull, nullptr) != ARCHIVE_OK)
    error_ = archive_reason(a);
  archive_entry* e = nullptr;
  while (!error_) {
    const int r = api().archive_read_next_header(a, &e);
    if (r == ARCHIVE_EOF) break;
    if (r < ARCHIVE_WARN) {
      error_ = archive_reason(a);
      break;
    }
    error_ = restorer_->member(a, e);
  }
  api().archive_read_free(a);
  if (error_) restorer_.reset(); // its trees go at once
}

StagedOutputs::~StagedOutputs() = default;

std::optional<std::string> StagedOutputs::commit() {
  if (error_) return error_;
  return restorer_->commit();
}

std::optional<std::string> restore_outputs(const std::vector<std::string>& paths, int fd, std::uint64_t offset,
                                           std::uint64_t len) {
  std::vector<char> buf(io_block);
  const ArchiveSource read = [&](const char*& data, std::size_t& got) {
    got = static_cast<std::size_t>(std::min<std::uint64_t>(len, buf.size()));
    if (got > 0 && !pread_all(fd, buf.data(), got, static_cast<off_t>(offset))) return false;
    offset += got;
    len -= got;
    data = buf.data();
    return true;
  };
  return StagedOutputs(paths, read).commit();
}

} // namespace bufferlock
