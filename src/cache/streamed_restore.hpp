// A hit of a remote store whose entry has --output PATHs, read as it comes
// (SPEC §18): the body's stdout and stderr go to an unnamed entry file, the
// outputs archive straight into the PATHs' private temporary directories
// (StagedOutputs), and every byte through the checksum and the signature on
// its way. The entry is found only once all of it verified; else the staged
// trees are removed, and it is a miss as a read into a file would have made
// it. The archive's bytes are never written twice.
#pragma once

#include "cache/store.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace bufferlock {

// Replaces `out` with the next bytes of the object from the body's start on
// (more than the body is ignored); false at their end or on a failure.
using BodyRuns = std::function<bool(std::string& out)>;

// The body as it comes, hashed as it is handed on, never past its length.
class BodyReader {
public:
  BodyReader(const BodyRuns& runs, std::uint64_t body_len, EntryMac* mac) : runs_(runs), len_(body_len), mac_(mac) {}

  // The next bytes up to body offset `until` (at most the body's end);
  // `len` 0 there. False when the runs ended or failed before.
  bool take(std::uint64_t until, const char*& data, std::size_t& len);

  std::uint64_t at() const { return at_; }
  bool whole() const { return at_ == len_; }
  std::uint64_t digest() const { return hash_.digest(); }

private:
  const BodyRuns& runs_;
  std::uint64_t len_;
  EntryMac* mac_;
  Checksum hash_;
  std::string run_;
  std::size_t used_ = 0; // of run_
  std::uint64_t at_ = 0; // in the body
};

// What read_streamed found: the lookup, and whether the body came short
// (the runs ended or failed: the caller knows whether for its server).
struct StreamedRead {
  Lookup lookup;
  bool short_body = false;
};

// Reads the body of the entry whose header is `header` (`head` its bytes,
// `trailer` its trailer, both from the object's tail) from `runs`, extracting
// its --output archive on the way; a stop signal meanwhile ends the process
// as it would have ended it, once the staged trees are removed.
StreamedRead read_streamed(const BodyRuns& runs, EntryHeader header, std::string_view head,
                           std::string_view trailer, const EntrySigner* signer);

} // namespace bufferlock
