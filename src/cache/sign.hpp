// Signed entries (--sign-key FILE): an HMAC-SHA256 over the whole entry, made
// with OpenSSL's EVP_MAC from a libcrypto loaded by dlopen() the first time a
// key is read, so a run without --sign-key loads and pays nothing more.
//
// The tag covers, in this order: the body (stdout, stderr, the outputs
// archive, as stored), the header with the tag's 32 bytes zeroed, and the
// header's length (8 bytes, little-endian), which fixes where the body ends.
#pragma once

#include "cache/entry.hpp"

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace bufferlock {

inline constexpr std::size_t entry_tag_size = 32;

// One tag being computed.
class EntryMac {
public:
  virtual ~EntryMac() = default;
  virtual void update(const char* data, std::size_t len) = 0;
  // The tag; a second call is not allowed.
  virtual std::string finish() = 0;
};

// The key of --sign-key, held only in memory (never printed).
class EntrySigner {
public:
  // Reads FILE: it must be a readable, non-empty regular file that neither
  // group nor others can read; its bytes, as they are, are the key.
  // libcrypto is loaded here. The error names the file, never its contents.
  static std::variant<EntrySigner, std::string> from_file(const std::string& path);

  std::unique_ptr<EntryMac> begin() const;

  // Signs `h` (its signature field set to 32 zero bytes while the body went
  // through `mac`): completes the tag and stores it in h.signature.
  static void seal(EntryMac& mac, EntryHeader& h);
  // Whether `h`'s tag is the one `mac` (fed the body) completes to.
  static bool matches(EntryMac& mac, const EntryHeader& h);

private:
  explicit EntrySigner(std::string key) : key_(std::move(key)) {}
  std::string key_;
};

} // namespace bufferlock
