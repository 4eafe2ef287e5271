// The address of an S3 store (SPEC §19): s3://BUCKET/PREFIX.
#pragma once

#include <string>
#include <string_view>
#include <variant>

namespace bufferlock::s3 {

struct Location {
  std::string bucket;
  std::string prefix; // "" (the bucket's root) or "a/b/": object keys are prefix + name

  bool operator==(const Location&) const = default;
};

// Whether `text` asks for an S3 store at all (its scheme), right or wrong.
bool is_s3_store(std::string_view text);

// The bucket and prefix, or why `text` is not an S3 store's address (for a
// one-line usage error). The bucket follows S3's naming rules: 3 to 63 of
// a-z 0-9 . -, a letter or digit at each end, no "..", not an IPv4 address.
// The prefix is a folder: its trailing '/' is optional; empty, "." and ".."
// segments and blank or control bytes are refused.
std::variant<Location, std::string> parse_s3_url(std::string_view text);

} // namespace bufferlock::s3
