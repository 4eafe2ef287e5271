#include "cache/streamed_restore.hpp"

#include "cache/outputs.hpp"
#include "run/command.hpp"
#include "util/io.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace bufferlock {

bool BodyReader::take(std::uint64_t until, const char*& data, std::size_t& len) {
  until = std::min(until, len_);
  len = 0;
  if (at_ >= until) return true;
  if (used_ == run_.size()) {
    if (!runs_(run_) || run_.empty()) return false;
    used_ = 0;
  }
  len = static_cast<std::size_t>(std::min<std::uint64_t>(until - at_, run_.size() - used_));
  data = run_.data() + used_;
  used_ += len;
  at_ += len;
  hash_.update(data, len);
  if (mac_) mac_->update(data, len);
  return true;
}

namespace {

Lookup corrupt(std::string why) { return {LookupState::corrupt, {}, std::move(why)}; }
Lookup unwritable() { return {LookupState::unreadable, {}, "cannot write a temporary file: " + errno_text(errno)}; }

enum class Copied { all, short_body, unwritable };

// Copies the body's stdout and stderr into the entry file behind its header.
Copied copy_streams(BodyReader& body, std::uint64_t until, int fd, std::uint64_t header_size) {
  const char* data = nullptr;
  std::size_t len = 0;
  while (body.at() < until) {
    const std::uint64_t at = body.at();
    if (!body.take(until, data, len)) return Copied::short_body;
    if (!pwrite_all(fd, data, len, static_cast<off_t>(header_size + at))) return Copied::unwritable;
  }
  return Copied::all;
}

} // namespace

StreamedRead read_streamed(const BodyRuns& runs, EntryHeader header, std::string_view head,
                           std::string_view trailer, const EntrySigner* signer) {
  if (signer && header.signature.empty()) return {corrupt("it is not signed (--sign-key)")};
  std::uint64_t want_payload = 0, want_header = 0;
  decode_trailer(trailer, want_payload, want_header);
  const std::unique_ptr<EntryMac> mac = signer ? signer->begin() : nullptr;
  BodyReader body(runs, header.body_len(), mac.get());
  const std::uint64_t streams = header.payload_len + header.stderr_len;
  // The entry file without the archive's bytes: a hole where they were.
  UniqueFd fd = anonymous_file(header.header_size() + streams);
  if (!fd) return {{LookupState::unreadable, {}, "cannot make a temporary file: " + errno_text(errno)}};
  if (!write_all(fd.get(), head)) return {unwritable()};
  switch (copy_streams(body, streams, fd.get(), header.header_size())) {
  case Copied::all: break;
  case Copied::short_body: return {corrupt("truncated"), true};
  case Copied::unwritable: return {unwritable()};
  }
  HoldStopSignals hold;
  const ArchiveSource archive = [&](const char*& data, std::size_t& len) {
    if (stop_signal() != 0) return false;
    return body.take(header.body_len(), data, len);
  };
  auto staged = std::make_shared<StagedOutputs>(header.outputs, archive);
  // What the archive left (its end, or all after a refused member): hashed.
  bool whole = true;
  for (const char* data = nullptr; whole && !body.whole();) {
    std::size_t len = 0;
    whole = archive(data, len);
  }
  if (const int sig = hold.end()) {
    // Its trees removed, the signal takes the course it would have taken
    // without the hold: the end of the process, as during any download.
    staged.reset();
    ::raise(sig);
    return {corrupt(stopped_by_signal)};
  }
  if (!whole) return {corrupt("truncated"), true};
  if (body.digest() != want_payload) return {corrupt("payload checksum mismatch")};
  if (mac && !EntrySigner::matches(*mac, header)) return {corrupt("its signature does not match --sign-key")};
  const std::uint64_t size = header.file_size();
  if (::ftruncate(fd.get(), static_cast<off_t>(size - entry_trailer)) != 0 ||
      !pwrite_all(fd.get(), trailer.data(), trailer.size(), static_cast<off_t>(size - entry_trailer)))
    return {unwritable()};
  return {{LookupState::found, CachedEntry{std::move(fd), std::move(header), {}, std::move(staged)}, {}}};
}

} // namespace bufferlock
