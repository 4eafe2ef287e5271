#include "redis/error.hpp"

#include <hiredis/hiredis.h>
#include <netdb.h>

#include <array>
#include <cerrno>

namespace bufferlock {

namespace {

// Error codes of a server that is restarting, loading, demoted or between
// masters: a later try can succeed.
constexpr std::array transient_codes = {std::string_view("LOADING"),  std::string_view("BUSY"),
                                        std::string_view("READONLY"), std::string_view("MASTERDOWN"),
                                        std::string_view("TRYAGAIN"), std::string_view("CLUSTERDOWN")};

std::string_view first_word(std::string_view text) { return text.substr(0, text.find(' ')); }

bool is_timeout_errno(int e) { return e == EAGAIN || e == EWOULDBLOCK || e == EINPROGRESS || e == ETIMEDOUT; }

} // namespace

Recovery classify(RedisError::Kind kind, std::string_view text) {
  switch (kind) {
  case RedisError::Kind::unreachable:
  case RedisError::Kind::dropped:
  case RedisError::Kind::timeout: return Recovery::transient;
  case RedisError::Kind::unknown_host:
  case RedisError::Kind::denied:
  case RedisError::Kind::protocol: return Recovery::permanent;
  case RedisError::Kind::server:
    for (std::string_view code : transient_codes)
      if (first_word(text) == code) return Recovery::transient;
    return Recovery::permanent;
  }
  return Recovery::permanent;
}

RedisError redis_error(RedisError::Kind kind, std::string text) {
  const Recovery r = classify(kind, text);
  return {kind, std::move(text), r};
}

RedisError connect_error(int err, std::string_view errstr, int saved_errno) {
  using K = RedisError::Kind;
  if (err == REDIS_ERR_OTHER) {
    // hiredis 0.14 reports a failed getaddrinfo as REDIS_ERR_OTHER with the
    // text of gai_strerror(). A resolver that is only unreachable for now
    // (EAI_AGAIN) may answer later; any other answer is that the name is unknown.
    if (errstr == gai_strerror(EAI_AGAIN)) return redis_error(K::unreachable, std::string(errstr));
    for (int code : {EAI_NONAME, EAI_NODATA, EAI_FAIL, EAI_SERVICE, EAI_FAMILY, EAI_ADDRFAMILY})
      if (errstr == gai_strerror(code)) return redis_error(K::unknown_host, std::string(errstr));
  }
  if (err == REDIS_ERR_IO &&
      (is_timeout_errno(saved_errno) || errstr.find("timed out") != std::string_view::npos))
    return redis_error(K::timeout, "connect timed out");
  if (err == REDIS_ERR_IO && (saved_errno == EACCES || saved_errno == EPERM))
    return redis_error(K::denied, std::string(errstr));
  // Refused, reset, unreachable, a unix socket not (yet) there: what a
  // server that is restarting looks like.
  return redis_error(K::unreachable, std::string(errstr));
}

RedisError io_error(int err, std::string_view errstr, int saved_errno) {
  using K = RedisError::Kind;
  if (err == REDIS_ERR_IO && (saved_errno == EAGAIN || saved_errno == EWOULDBLOCK))
    return redis_error(K::timeout, "no answer within the timeout");
  if (err == REDIS_ERR_EOF) return redis_error(K::dropped, "the server closed the connection");
  if (err == REDIS_ERR_PROTOCOL) return redis_error(K::protocol, std::string(errstr));
  return redis_error(K::dropped, std::string(errstr));
}

} // namespace bufferlock
