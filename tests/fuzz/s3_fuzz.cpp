// The S3 store's parsers of outside input (SPEC §19): s3://BUCKET/PREFIX,
// the shared ~/.aws files, and the encoding the signer gives paths and
// queries. Never crash; a parsed address follows S3's naming rules; what the
// signer encodes holds only unreserved bytes and %XX escapes.
#include "fuzz.hpp"
#include "s3/config.hpp"
#include "s3/sigv4.hpp"
#include "s3/url.hpp"

#include <cctype>

using namespace bufferlock;
using namespace bufferlock::s3;

namespace {

bool encoded(std::string_view s, std::string_view also) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = s[i];
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || also.find(c) != std::string_view::npos)
      continue;
    if (c != '%' || i + 2 >= s.size() || !std::isxdigit(static_cast<unsigned char>(s[i + 1])) ||
        !std::isxdigit(static_cast<unsigned char>(s[i + 2])))
      return false;
    i += 2;
  }
  return true;
}

void check_url(std::string_view text) {
  const auto parsed = parse_s3_url(text);
  const auto* loc = std::get_if<Location>(&parsed);
  if (!loc) return;
  fuzz::check(loc->bucket.size() >= 3 && loc->bucket.size() <= 63, "bucket length");
  for (char c : loc->bucket)
    fuzz::check((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-', "bucket byte");
  fuzz::check(loc->prefix.empty() || loc->prefix.back() == '/', "prefix not a folder");
  fuzz::check(loc->prefix.find("//") == std::string::npos && !loc->prefix.starts_with('/'), "empty folder");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = fuzz::as_text(data, size);
  check_url(text);
  if (auto section = ini_section(text, "default"))
    for (const auto& [key, value] : *section) {
      for (char c : key) fuzz::check(!std::isupper(static_cast<unsigned char>(c)), "a key not lowercase");
      fuzz::check(value.empty() || (!std::isspace(static_cast<unsigned char>(value.front())) &&
                                    !std::isspace(static_cast<unsigned char>(value.back()))),
                  "a value not trimmed");
    }
  // The first line a name, the rest a value.
  const std::size_t nl = text.find('\n');
  const std::string_view name = text.substr(0, nl);
  const std::string_view value = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
  fuzz::check(encoded(canonical_query({{std::string(name), std::string(value)}}), "=&"), "query not encoded");
  fuzz::check(encoded(encode_path(text), "/"), "path not encoded");
  return 0;
}
