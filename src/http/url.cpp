#include "http/url.hpp"

#include "redis/url.hpp"

namespace bufferlock {

bool is_http_store(std::string_view text) { return text.starts_with("http://") || text.starts_with("https://"); }

std::variant<StoreUrl, std::string> parse_store_url(std::string_view text) {
  StoreUrl u;
  u.tls = text.starts_with("https://");
  const std::string_view scheme = u.tls ? "https://" : "http://";
  if (!is_http_store(text)) return std::string("expected an http:// or https:// URL");
  std::string_view rest = text.substr(scheme.size());
  const std::size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? std::string_view("/") : rest.substr(slash);
  if (path.find_first_of("?#") != std::string_view::npos) return std::string("a query or fragment has no place in it");
  for (const char c : path)
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) return std::string("a blank or control byte in its path");
  if (const std::size_t at = authority.rfind('@'); at != std::string_view::npos) {
    const std::string_view userinfo = authority.substr(0, at);
    authority = authority.substr(at + 1);
    const std::size_t colon = userinfo.find(':');
    auto user = percent_decode(userinfo.substr(0, colon));
    auto password = colon == std::string_view::npos ? std::optional<std::string>("")
                                                    : percent_decode(userinfo.substr(colon + 1));
    if (!user || !password) return std::string("bad %-escape in the user or password");
    u.user = std::move(*user);
    u.password = std::move(*password);
  }
  if (authority.empty() || authority.front() == ':') return std::string("no host");
  for (const char c : authority)
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f || c == '\\')
      return std::string("a blank or control byte in its host");
  if (const std::size_t colon = authority.rfind(':');
      colon != std::string_view::npos && authority.find(']', colon) == std::string_view::npos) {
    const std::string_view port = authority.substr(colon + 1);
    int value = 0;
    for (const char c : port) {
      if (c < '0' || c > '9' || value > 65535) return std::string("bad port");
      value = value * 10 + (c - '0');
    }
    if (port.empty() || value < 1 || value > 65535) return std::string("bad port");
  }
  u.base.append(scheme).append(authority).append(path);
  if (u.base.back() != '/') u.base += '/';
  u.display = redact_url(text);
  return u;
}

} // namespace bufferlock
