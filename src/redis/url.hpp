// Redis server addresses (SPEC §3):
//   redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]     unix:///PATH/TO/SOCKET[?db=N]
//   rediss://... the same over TLS (SPEC §12)
//   redis-sentinel://[[USER]:PASSWORD@]HOST[:PORT][,HOST[:PORT]...][/DB]#MASTER
//   (rediss-sentinel:// over TLS), SPEC §13
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace bufferlock {

struct RedisUrl {
  enum class Transport { tcp, unix_socket, sentinel };
  struct Address {
    std::string host;
    int port;
    bool operator==(const Address&) const = default;
  };
  Transport transport = Transport::tcp;
  std::string host;               // tcp; brackets of an IPv6 address removed
  int port = 6379;                // tcp
  std::vector<Address> sentinels; // sentinel: asked in this order (default port 26379)
  std::string master_name;        // sentinel: the MASTER after '#'
  bool tls = false;               // rediss://
  std::string socket_path;        // unix_socket
  int db = 0;
  std::string user;                    // empty: the default user
  std::optional<std::string> password; // from the URL, percent-decoded

  bool operator==(const RedisUrl&) const = default;

  // The server as messages name it, never with the password: "redis://127.0.0.1:6379/0",
  // "unix:///run/redis.sock?db=2", "redis://user@host:6379/0".
  std::string display() const;

  // The server at `host`:`port` with this URL's TLS, user, password and database.
  RedisUrl at(std::string host, int port) const;
};

// What went wrong with a URL, for a usage error.
struct UrlError {
  std::string reason;
};

std::variant<RedisUrl, UrlError> parse_redis_url(std::string_view text);

// Where the password of the user information is in `text` (any string given
// as a URL, parseable or not, after whatever precedes its scheme, such as
// "--redis="): nullopt when there is none.
struct TextSpan {
  std::size_t pos;
  std::size_t len;
};
std::optional<TextSpan> url_password_span(std::string_view text);

// `text` (any string given as a URL, parseable or not) with the password
// part of its user information replaced by "***".
std::string redact_url(std::string_view text);

// Percent-decoding (%40 -> '@'); nullopt for a broken escape.
std::optional<std::string> percent_decode(std::string_view s);

} // namespace bufferlock
