// The files a build makes (--output PATH, SPEC §16): packed after a
// successful build into a pax tar written with libarchive, in one zstd
// frame unless its first MiB does not shrink (incompressible files go raw),
// and restored on a hit, each PATH as a whole (built beside it, then renamed
// over it). libarchive is loaded with dlopen() the first time an archive is
// made or read: its shared library pulls in a dozen others, which a plain
// stdout hit must not pay for.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace bufferlock {

// The first of `paths` that does not exist (lstat), if any.
std::optional<std::string> first_missing_output(const std::vector<std::string>& paths);

// Takes the archive's bytes as they are made; false to stop (the error is
// the sink's to keep).
using OutputsSink = std::function<bool(const char* data, std::size_t len)>;

// Writes `paths` to `sink` as one archive, as it reads them: members "I" and
// "I/..." for the I-th path; regular files (bytes, mode, mtime), directories
// and symbolic links (as links). Other file types are left out. The error
// names the path that could not be read, or libarchive's reason; nullopt
// also when the sink refused (its own error says why).
std::optional<std::string> pack_outputs(const std::vector<std::string>& paths, const OutputsSink& sink);

// Restores `paths` from the archive at [offset, offset+len) of `fd`: each
// path is extracted into a new directory beside it and renamed over it only
// once the whole archive was read. Members with absolute names, "." or ".."
// components, names that pass through a symbolic link, hard links, devices,
// FIFOs, or that belong to no path, refuse the whole archive: nothing is
// renamed into place and the temporary directories are removed. nullopt on
// success, else why.
std::optional<std::string> restore_outputs(const std::vector<std::string>& paths, int fd,
                                           std::uint64_t offset, std::uint64_t len);

// Hands over the archive's next bytes (`len` 0 at its end), kept valid until
// the next call; false when they cannot be had (the source knows why).
using ArchiveSource = std::function<bool(const char*& data, std::size_t& len)>;

class Restorer;

// restore_outputs in two steps, for an archive whose bytes are extracted as
// they come, before the entry they belong to is verified: the constructor
// extracts into each PATH's private temporary directory (the same checks
// refuse the same members), commit() renames the trees into place. Trees
// not committed are removed with the object.
class StagedOutputs {
public:
  // Extracts the whole archive that `source` hands over; error() says
  // whether it was refused (nothing is left then).
  StagedOutputs(const std::vector<std::string>& paths, const ArchiveSource& source);
  ~StagedOutputs();
  StagedOutputs(const StagedOutputs&) = delete;
  StagedOutputs& operator=(const StagedOutputs&) = delete;

  const std::optional<std::string>& error() const { return error_; }
  // Puts the staged trees in place: nullopt, else why (or the staging's error).
  std::optional<std::string> commit();

private:
  std::unique_ptr<Restorer> restorer_;
  std::optional<std::string> error_;
};

} // namespace bufferlock
