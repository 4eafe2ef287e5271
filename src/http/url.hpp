// The URL of an http(s) store (SPEC §18): http[s]://[USER[:PASSWORD]@]HOST[:PORT]/PATH.
#pragma once

#include <string>
#include <string_view>
#include <variant>

namespace bufferlock {

struct StoreUrl {
  std::string base;     // scheme://HOST[:PORT]/PATH/, without credentials: objects are base + name
  std::string display;  // as given, the password as ***: for messages
  std::string user;     // percent-decoded; empty: none
  std::string password; // likewise
  bool tls = false;     // https

  bool operator==(const StoreUrl&) const = default;
};

// Whether `text` asks for an http(s) store at all (its scheme), right or wrong.
bool is_http_store(std::string_view text);

// The URL, or why it is not one (for a one-line usage error).
std::variant<StoreUrl, std::string> parse_store_url(std::string_view text);

} // namespace bufferlock
