#include "s3/url.hpp"

#include <algorithm>
#include <cctype>

namespace bufferlock::s3 {

namespace {

constexpr std::string_view scheme = "s3://";

bool letter_or_digit(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

// Four dot-separated runs of digits: S3 refuses such names.
bool looks_like_ipv4(std::string_view name) {
  int parts = 1;
  for (char c : name) {
    if (c == '.') ++parts;
    else if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return parts == 4;
}

// Empty when `name` is a valid bucket name, else why not.
std::string bucket_problem(std::string_view name) {
  if (name.empty()) return "no bucket";
  if (name.size() < 3 || name.size() > 63) return "a bucket name has 3 to 63 characters";
  for (char c : name)
    if (!letter_or_digit(c) && c != '.' && c != '-')
      return "a bucket name has only lowercase letters, digits, '.' and '-'";
  if (!letter_or_digit(name.front()) || !letter_or_digit(name.back()))
    return "a bucket name begins and ends with a letter or a digit";
  if (name.find("..") != std::string_view::npos) return "a bucket name has no \"..\"";
  if (looks_like_ipv4(name)) return "a bucket name is not an IP address";
  return {};
}

// Empty when `prefix` (without its trailing '/') is a valid folder, else why not.
std::string prefix_problem(std::string_view prefix) {
  for (char c : prefix)
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) return "a blank or control byte in its prefix";
  if (prefix.find_first_of("?#") != std::string_view::npos) return "a query or fragment has no place in it";
  std::size_t begin = 0;
  while (begin <= prefix.size()) {
    const std::size_t end = std::min(prefix.find('/', begin), prefix.size());
    const std::string_view segment = prefix.substr(begin, end - begin);
    if (segment.empty() || segment == "." || segment == "..")
      return "an empty, \".\" or \"..\" folder in its prefix";
    begin = end + 1;
  }
  return {};
}

} // namespace

bool is_s3_store(std::string_view text) { return text.starts_with(scheme); }

std::variant<Location, std::string> parse_s3_url(std::string_view text) {
  if (!is_s3_store(text)) return std::string("expected an s3://BUCKET/PREFIX URL");
  std::string_view rest = text.substr(scheme.size());
  const std::size_t slash = rest.find('/');
  const std::string_view bucket = rest.substr(0, slash);
  std::string_view prefix = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
  if (std::string why = bucket_problem(bucket); !why.empty()) return why;
  if (prefix.size() > 1 && prefix.ends_with('/')) prefix.remove_suffix(1); // "//" stays: an empty folder
  Location loc{std::string(bucket), {}};
  if (prefix.empty()) return loc;
  if (std::string why = prefix_problem(prefix); !why.empty()) return why;
  loc.prefix = std::string(prefix) + "/";
  return loc;
}

} // namespace bufferlock::s3
