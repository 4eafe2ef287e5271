#include "redis/url.hpp"

#include <climits>

namespace bufferlock {

namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A decimal number in [min, max]; nullopt otherwise.
std::optional<int> number(std::string_view s, int min, int max) {
  if (s.empty() || s.size() > 10) return std::nullopt;
  long long v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  if (v < min || v > max) return std::nullopt;
  return static_cast<int>(v);
}

bool has_control_or_space(std::string_view s) {
  for (char c : s)
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) return true;
  return false;
}

// HOST[:PORT] or [IPV6][:PORT] into `host` and `port` (kept when not given).
std::optional<UrlError> parse_host_port(std::string_view authority, std::string& host, int& port_out) {
  std::string_view port_text;
  if (!authority.empty() && authority.front() == '[') {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) return UrlError{"unclosed '[' in the host"};
    host = std::string(authority.substr(1, close - 1));
    const std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return UrlError{"unexpected text after the host"};
      port_text = after.substr(1);
      if (port_text.empty()) return UrlError{"empty port"};
    }
  } else {
    const std::size_t colon = authority.find(':');
    host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) {
      port_text = authority.substr(colon + 1);
      if (port_text.empty()) return UrlError{"empty port"};
    }
  }
  if (host.empty()) return UrlError{"no host"};
  if (has_control_or_space(host)) return UrlError{"bad character in the host"};
  if (!port_text.empty()) {
    auto port = number(port_text, 1, 65535);
    if (!port) return UrlError{"the port must be a number from 1 to 65535"};
    port_out = *port;
  }
  return std::nullopt;
}

std::variant<RedisUrl, UrlError> parse_tcp(std::string_view rest) {
  RedisUrl url;
  const std::size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  const std::string_view path = slash == std::string_view::npos ? "" : rest.substr(slash + 1);
  if (authority.find('?') != std::string_view::npos || path.find('?') != std::string_view::npos)
    return UrlError{"query parameters are not supported in redis:// URLs"};

  const std::size_t at = authority.rfind('@');
  if (at != std::string_view::npos) {
    const std::string_view userinfo = authority.substr(0, at);
    authority = authority.substr(at + 1);
    const std::size_t colon = userinfo.find(':');
    auto user = percent_decode(userinfo.substr(0, colon));
    if (!user) return UrlError{"bad %-escape in the user name"};
    url.user = *user;
    if (colon != std::string_view::npos) {
      auto password = percent_decode(userinfo.substr(colon + 1));
      if (!password) return UrlError{"bad %-escape in the password"};
      url.password = *password;
    }
  }

  if (auto e = parse_host_port(authority, url.host, url.port)) return *e;
  if (!path.empty()) {
    auto db = number(path, 0, INT_MAX);
    if (!db) return UrlError{"the database must be a number, as in redis://host:6379/0"};
    url.db = *db;
  }
  return url;
}

std::variant<RedisUrl, UrlError> parse_unix(std::string_view rest) {
  RedisUrl url;
  url.transport = RedisUrl::Transport::unix_socket;
  const std::size_t q = rest.find('?');
  const std::string_view path = rest.substr(0, q);
  if (path.empty() || path.front() != '/')
    return UrlError{"a unix socket URL needs an absolute path, as in unix:///run/redis.sock"};
  auto decoded = percent_decode(path);
  if (!decoded) return UrlError{"bad %-escape in the socket path"};
  url.socket_path = *decoded;
  if (q != std::string_view::npos) {
    const std::string_view query = rest.substr(q + 1);
    if (query.substr(0, 3) != "db=") return UrlError{"the only query parameter is db=N"};
    auto db = number(query.substr(3), 0, INT_MAX);
    if (!db) return UrlError{"db= must be a number"};
    url.db = *db;
  }
  return url;
}

// HOST[:PORT],HOST[:PORT]... with the user, password and database of a
// redis:// URL, then #MASTER.
std::variant<RedisUrl, UrlError> parse_sentinel(std::string_view rest) {
  const std::size_t hash = rest.rfind('#');
  if (hash == std::string_view::npos || hash + 1 == rest.size())
    return UrlError{"a sentinel URL ends in #MASTER, the name the sentinels know the master by"};
  auto master = percent_decode(rest.substr(hash + 1));
  if (!master || master->empty() || has_control_or_space(*master)) return UrlError{"bad master name"};
  rest = rest.substr(0, hash);
  // The hosts are what lies between the user information and the database.
  const std::size_t slash = rest.find('/');
  const std::size_t at = rest.substr(0, slash).rfind('@');
  const std::size_t hosts_begin = at == std::string_view::npos ? 0 : at + 1;
  const std::string_view hosts =
      rest.substr(hosts_begin, slash == std::string_view::npos ? slash : slash - hosts_begin);
  const std::size_t comma = hosts.find(',');
  std::string first(rest.substr(0, hosts_begin));
  first.append(hosts.substr(0, comma));
  if (slash != std::string_view::npos) first.append(rest.substr(slash));
  auto parsed = parse_tcp(first);
  if (auto* e = std::get_if<UrlError>(&parsed)) return *e;
  RedisUrl url = std::move(std::get<RedisUrl>(parsed));
  url.transport = RedisUrl::Transport::sentinel;
  url.master_name = std::move(*master);
  std::string_view list = hosts;
  while (true) {
    const std::size_t next = list.find(',');
    RedisUrl::Address a{{}, 26379};
    if (auto e = parse_host_port(list.substr(0, next), a.host, a.port)) return *e;
    url.sentinels.push_back(std::move(a));
    if (next == std::string_view::npos) break;
    list.remove_prefix(next + 1);
  }
  url.host = url.sentinels.front().host;
  url.port = url.sentinels.front().port;
  return url;
}

} // namespace

std::optional<std::string> percent_decode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    if (i + 2 >= s.size()) return std::nullopt;
    const int hi = hex_value(s[i + 1]), lo = hex_value(s[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}


std::variant<RedisUrl, UrlError> parse_redis_url(std::string_view text) {
  const std::size_t sep = text.find("://");
  if (sep == std::string_view::npos)
    return UrlError{"expected redis://HOST[:PORT][/DB] or unix:///PATH[?db=N]"};
  std::string scheme(text.substr(0, sep));
  for (auto& c : scheme)
    c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  const std::string_view rest = text.substr(sep + 3);
  if (scheme == "redis" || scheme == "rediss") {
    auto url = parse_tcp(rest);
    if (auto* u = std::get_if<RedisUrl>(&url)) u->tls = scheme == "rediss";
    return url;
  }
  if (scheme == "unix") return parse_unix(rest);
  if (scheme == "redis-sentinel" || scheme == "rediss-sentinel") {
    auto url = parse_sentinel(rest);
    if (auto* u = std::get_if<RedisUrl>(&url)) u->tls = scheme == "rediss-sentinel";
    return url;
  }
  return UrlError{"unknown scheme '" + scheme +
                  "://', expected redis://, rediss://, unix:// or redis-sentinel://"};
}

std::optional<TextSpan> url_password_span(std::string_view text) {
  const std::size_t sep = text.find("://");
  const std::size_t start = sep == std::string_view::npos ? 0 : sep + 3;
  const std::size_t end = text.find('/', start);
  const std::string_view authority = text.substr(start, end == std::string_view::npos ? end : end - start);
  const std::size_t at = authority.rfind('@');
  if (at == std::string_view::npos) return std::nullopt;
  const std::size_t colon = authority.find(':');
  if (colon == std::string_view::npos || colon > at) return std::nullopt;
  return TextSpan{start + colon + 1, at - colon - 1};
}

std::string redact_url(std::string_view text) {
  const auto span = url_password_span(text);
  if (!span) return std::string(text);
  std::string out(text.substr(0, span->pos));
  out += "***";
  out += text.substr(span->pos + span->len);
  return out;
}

namespace {

// HOST:PORT, an IPv6 address in brackets.
void append_host_port(std::string& s, const std::string& host, int port) {
  const bool ipv6 = host.find(':') != std::string::npos;
  s.append(ipv6 ? "[" : "").append(host).append(ipv6 ? "]" : "").append(":").append(std::to_string(port));
}

} // namespace

RedisUrl RedisUrl::at(std::string new_host, int new_port) const {
  RedisUrl u;
  u.host = std::move(new_host);
  u.port = new_port;
  u.tls = tls;
  u.db = db;
  u.user = user;
  u.password = password;
  return u;
}

std::string RedisUrl::display() const {
  if (transport == Transport::sentinel) {
    std::string s = tls ? "rediss-sentinel://" : "redis-sentinel://";
    if (!user.empty()) s.append(user).append("@");
    for (const auto& a : sentinels) {
      if (&a != &sentinels.front()) s.append(",");
      append_host_port(s, a.host, a.port);
    }
    return s.append("/").append(std::to_string(db)).append("#").append(master_name);
  }
  if (transport == Transport::unix_socket) {
    std::string s = "unix://" + socket_path;
    if (db != 0) s += "?db=" + std::to_string(db);
    return s;
  }
  std::string s = tls ? "rediss://" : "redis://";
  if (!user.empty()) s.append(user).append("@");
  append_host_port(s, host, port);
  s.append("/").append(std::to_string(db));
  return s;
}

} // namespace bufferlock
