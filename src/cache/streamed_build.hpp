// A build on its way into a store: the entry's bytes (cache/entry.hpp) made
// as the output comes, in parts of a bounded size that a sink sends on (to
// a temporary file, a Redis key, an upload), then a header and a trailer
// once everything is known. The one encoder of entries: compression, the
// signature, the stderr held until stdout is complete, the outputs
// archive, --max-entry.
#pragma once

#include "cache/compress.hpp"
#include "cache/store.hpp"
#include "util/checksum.hpp"

#include <memory>
#include <utility>
#include <variant>
#include <optional>
#include <string>

namespace bufferlock {

class StreamedBuild : public EntryBuild {
public:
  // Past `what.max_entry` (the most stored bytes, the body) nothing more is
  // sent, the sink abandons what it has, and the bytes are only counted, so
  // that the warning can name the stored size.
  StreamedBuild(const EntryStore& store, std::string_view key, const Inputs& inputs, std::int64_t created_ns,
                const BuildContents& what, std::size_t part_size);

  // Prepares the stderr file (and whatever the sink needs first); an error
  // when it cannot be made.
  virtual std::optional<SysError> start();

  // The published entry, read back from its store (a remote store's: the
  // build kept no copy); nullopt, with error(), when it cannot be.
  std::optional<CachedEntry> entry() override;

  bool append(const char* data, std::size_t len) final;
  bool append_stderr(const char* data, std::size_t len) final;
  bool append_outputs(const char* data, std::size_t len) final;
  std::optional<SysError> publish() final;
  const std::optional<SysError>& error() const final { return error_; }
  bool too_large() const final { return too_large_; }
  std::uint64_t stored_size() const final { return body_; }
  const EntryHeader& header() const final { return header_; }

protected:
  // Sends a full part of the body (the parts, in order, are the body);
  // false, with fail(), when it could not.
  virtual bool send_part(std::string& part) = 0;
  // Completes the entry: the last part (maybe empty), then the header and
  // the trailer, made visible at once; the error, else nullopt.
  virtual std::optional<SysError> finish(std::string& last_part, const std::string& header,
                                         const std::string& trailer) = 0;
  // The output outgrew --max-entry: removes whatever was sent.
  virtual void abandon() = 0;
  // The unnamed file that holds stderr until stdout is complete, and the
  // name its errors are said with.
  virtual UniqueFd hold_file(std::string& name);

  void fail(SysError e) { error_ = std::move(e); }
  bool published() const { return published_; }
  std::uint64_t parts_sent() const { return parts_; }

private:
  bool usable() const { return !error_ && !too_large_; }
  // Stored bytes (raw, or compressed blocks): what --max-entry counts.
  bool store_stdout(const char* data, std::size_t len);
  bool store_stderr(const char* data, std::size_t len);
  // Sends `len` bytes of `src` from its start behind what was sent.
  bool send_behind(int src, std::uint64_t len);
  // Adds stored bytes to the body (hashed, in parts).
  bool send_body(const char* data, std::size_t len);
  // Completes stdout (compression) and sends the held stderr behind it; once.
  bool end_streams();
  // Counts stored bytes; false once past --max-entry (then too_large_).
  bool count(std::size_t len);
  // Hands the sink a full part.
  bool flush();

  const EntryStore& store_;
  std::size_t part_size_;
  std::optional<std::uint64_t> max_entry_;
  EntryHeader header_;
  Checksum hash_;
  std::unique_ptr<EntryMac> mac_;                        // --sign-key: the tag so far
  std::unique_ptr<BlockCompressor> stdout_z_, stderr_z_; // compression (always, in remote stores)
  std::string pending_;                                  // bytes not sent yet (at most one part)
  std::uint64_t parts_ = 0;                              // parts sent
  std::uint64_t body_ = 0;                               // stored bytes so far, counted past --max-entry too
  bool keep_stderr_ = false;
  UniqueFd stderr_fd_;  // --keep-stderr: held until stdout is complete
  std::string stderr_name_; // its name in errors
  std::optional<SysError> error_;
  bool too_large_ = false;
  bool streams_ended_ = false;
  bool published_ = false;
};

// A build of type Build made with `args` and started: begin_build's answer.
template <class Build, class... Args>
BuildOrError start_build(Args&&... args) {
  auto b = std::make_unique<Build>(std::forward<Args>(args)...);
  if (auto e = b->start()) return *e;
  return std::unique_ptr<EntryBuild>(std::move(b));
}

} // namespace bufferlock
