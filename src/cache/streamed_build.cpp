#include "cache/streamed_build.hpp"

#include "run/command.hpp"
#include "util/clock.hpp"
#include "util/files.hpp"
#include "util/io.hpp"

#include <algorithm>
#include <cerrno>

namespace bufferlock {

StreamedBuild::StreamedBuild(const EntryStore& store, std::string_view key, const Inputs& inputs,
                             std::int64_t created_ns, const BuildContents& what, std::size_t part_size)
    : store_(store), part_size_(part_size), max_entry_(what.max_entry) {
  header_.created_ns = created_ns;
  header_.key = std::string(key);
  header_.inputs = inputs;
  header_.outputs = what.outputs;
  keep_stderr_ = what.keep_stderr == KeepStderr::yes;
  // Every build keeps its build time (for cache --stats), a version 3 section.
  header_.version = entry_format_version_3;
  header_.timed = true;
  header_.compression = what.compress; // its flags and lengths are set by publish()
  if (header_.version == entry_format_version_3) header_.sections = what.sections;
  if (const EntrySigner* signer = store.signer()) {
    header_.signature.assign(entry_tag_size, '\0'); // sealed by publish()
    mac_ = signer->begin();
  }
}

std::optional<SysError> StreamedBuild::start() {
  if (header_.compression) {
    stdout_z_ = std::make_unique<BlockCompressor>([this](const char* d, std::size_t n) { return store_stdout(d, n); });
    if (keep_stderr_)
      stderr_z_ = std::make_unique<BlockCompressor>([this](const char* d, std::size_t n) { return store_stderr(d, n); });
  }
  if (!keep_stderr_) return std::nullopt;
  stderr_fd_ = hold_file(stderr_name_);
  if (!stderr_fd_) return SysError{stderr_name_, errno_text(errno)};
  return std::nullopt;
}

std::optional<CachedEntry> StreamedBuild::entry() {
  Lookup l = store_.lookup(header_.key, header_.address());
  if (l.state == LookupState::found) return std::move(l.entry);
  fail(SysError{store_.location(), l.why.empty() ? "the new entry is gone" : l.why});
  return std::nullopt;
}

UniqueFd StreamedBuild::hold_file(std::string& name) {
  name = "a temporary file";
  return anonymous_file(part_size_ + 1);
}

// Past --max-entry, append() and the rest go on taking bytes, to count them.
bool StreamedBuild::append(const char* data, std::size_t len) {
  if (error_) return false;
  return stdout_z_ ? stdout_z_->write(data, len) : store_stdout(data, len);
}

bool StreamedBuild::append_stderr(const char* data, std::size_t len) {
  if (!keep_stderr_) return true;
  if (error_) return false;
  return stderr_z_ ? stderr_z_->write(data, len) : store_stderr(data, len);
}

bool StreamedBuild::store_stdout(const char* data, std::size_t len) {
  if (error_) return false;
  if (!count(len)) return true; // only counted
  header_.payload_len += len;
  return send_body(data, len);
}

bool StreamedBuild::send_body(const char* data, std::size_t len) {
  hash_.update(data, len);
  if (mac_) mac_->update(data, len);
  // Parts of at most one part_size_, whatever size the compressor hands over.
  while (len > 0) {
    const std::size_t take = std::min(len, part_size_ - pending_.size());
    pending_.append(data, take);
    data += take;
    len -= take;
    if (pending_.size() == part_size_ && !flush()) return false;
  }
  return true;
}

bool StreamedBuild::store_stderr(const char* data, std::size_t len) {
  if (error_) return false;
  if (!count(len)) return true;
  if (!write_all(stderr_fd_.get(), data, len)) {
    error_ = SysError{stderr_name_, errno_text(errno)};
    return false;
  }
  header_.stderr_len += len;
  return true;
}

// The outputs archive goes out as it is packed, behind stderr, in parts
// like stdout.
bool StreamedBuild::append_outputs(const char* data, std::size_t len) {
  if (!end_streams()) return false;
  if (!count(len)) return true;
  header_.outputs_len += len;
  return send_body(data, len);
}

bool StreamedBuild::end_streams() {
  if (error_) return false;
  if (streams_ended_) return true;
  streams_ended_ = true;
  if (stdout_z_) {
    if (!stdout_z_->finish() || (stderr_z_ && !stderr_z_->finish())) return false;
    header_.compressed = (stdout_z_->framed() ? entry_compressed_stdout : 0) |
                         (stderr_z_ && stderr_z_->framed() ? entry_compressed_stderr : 0);
    header_.raw_stdout_len = stdout_z_->raw_len();
    header_.raw_stderr_len = stderr_z_ ? stderr_z_->raw_len() : 0;
  }
  if (too_large_) return true;
  // The held stderr goes behind stdout, in parts like stdout.
  if (!send_behind(stderr_fd_.get(), header_.stderr_len)) return false;
  stderr_fd_.reset();
  return true;
}

std::optional<SysError> StreamedBuild::publish() {
  if (!end_streams()) return error_;
  if (too_large_) return std::nullopt;
  if (stop_signal() != 0) {
    fail(SysError{"", stopped_by_signal});
    return error_;
  }
  header_.build_ns = static_cast<std::uint64_t>(std::max<std::int64_t>(0, wall_clock_ns() - header_.created_ns));
  if (mac_) EntrySigner::seal(*mac_, header_);
  const std::string head = encode_header(header_);
  const std::string trailer = encode_trailer(hash_.digest(), checksum(head));
  if (auto e = finish(pending_, head, trailer)) {
    error_ = std::move(e);
    pending_ = std::string();
    return error_;
  }
  pending_ = std::string();
  published_ = true;
  return std::nullopt;
}

bool StreamedBuild::send_behind(int src, std::uint64_t len) {
  for (std::uint64_t at = 0; at < len;) {
    const std::size_t take = std::min<std::uint64_t>(len - at, part_size_ - pending_.size());
    const std::size_t old = pending_.size();
    pending_.resize(old + take);
    if (!pread_all(src, pending_.data() + old, take, static_cast<off_t>(at))) {
      error_ = SysError{stderr_name_, errno_text(errno)};
      return false;
    }
    hash_.update(pending_.data() + old, take);
    if (mac_) mac_->update(pending_.data() + old, take);
    at += take;
    if (pending_.size() == part_size_ && !flush()) return false;
  }
  return true;
}

bool StreamedBuild::count(std::size_t len) {
  body_ += len;
  if (too_large_) return false;
  if (!max_entry_ || body_ <= *max_entry_) return true;
  too_large_ = true;
  pending_ = std::string();
  stderr_fd_.reset();
  abandon();
  parts_ = 0;
  return false;
}

bool StreamedBuild::flush() {
  // A stop signal after the command's end abandons the upload (the caller
  // exits 128+N): nothing more is sent, and nothing is published.
  if (stop_signal() != 0) fail(SysError{"", stopped_by_signal});
  if (error_ || !send_part(pending_)) {
    pending_ = std::string();
    return false;
  }
  ++parts_;
  pending_.clear();
  return true;
}

} // namespace bufferlock
