// parse_redis_url and redact_url (SPEC §3, §12): never crash; a parsed URL
// has a usable port and database, and its display form does not depend on
// the password.
#include "fuzz.hpp"
#include "redis/url.hpp"

using namespace bufferlock;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = fuzz::as_text(data, size);
  const std::string redacted = redact_url(text);
  const auto parsed = parse_redis_url(text);
  if (const auto* url = std::get_if<RedisUrl>(&parsed)) {
    switch (url->transport) {
    case RedisUrl::Transport::tcp:
      fuzz::check(url->port >= 1 && url->port <= 65535, "port out of range");
      fuzz::check(!url->host.empty(), "empty host");
      break;
    case RedisUrl::Transport::unix_socket: fuzz::check(!url->socket_path.empty(), "empty socket path"); break;
    case RedisUrl::Transport::sentinel:
      fuzz::check(!url->sentinels.empty(), "a sentinel URL without sentinels");
      for (const auto& s : url->sentinels) {
        fuzz::check(s.port >= 1 && s.port <= 65535, "sentinel port out of range");
        fuzz::check(!s.host.empty(), "empty sentinel host");
      }
      fuzz::check(!url->master_name.empty(), "a sentinel URL without MASTER");
      break;
    }
    fuzz::check(url->db >= 0, "negative database");
    const std::string shown = url->display();
    // The display form does not depend on the password at all.
    RedisUrl other = *url;
    other.password = url->password ? *url->password + "x" : "x";
    fuzz::check(other.display() == shown, "display() depends on the password");
  }
  return 0;
}
