#include "redis/error.hpp"

#include "util/files.hpp"

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
  case RedisError::Kind::protocol:
  case RedisError::Kind::tls:
  case RedisError::Kind::redirect:
  case RedisError::Kind::unknown_master: return Recovery::permanent;
  case RedisError::Kind::quorum: return Recovery::transient; // see quorum_error
  case RedisError::Kind::server:
    for (std::string_view code : transient_codes)
      if (first_word(text) == code) return Recovery::transient;
    return Recovery::permanent;
  }
  return Recovery::permanent;
}

bool is_acl_refusal(const RedisError& e) {
  return e.kind == RedisError::Kind::server &&
         (first_word(e.text) == "NOPERM" ||
          e.text.find("The user executing the script can't") != std::string::npos);
}

RedisError redis_error(RedisError::Kind kind, std::string text) {
  const Recovery r = classify(kind, text);
  RedisError e{kind, std::move(text), r};
  if (is_acl_refusal(e))
    e.text += " (the Redis user lacks a right that bufferlock needs: see SECURITY in bufferlock(1))";
  return e;
}

RedisError connect_error(int err) {
  using K = RedisError::Kind;
  if (err == EACCES || err == EPERM) return redis_error(K::denied, errno_text(err));
  if (is_timeout_errno(err)) return redis_error(K::timeout, "connect timed out");
  // Refused, reset, unreachable, a unix socket not (yet) there: what a
  // server that is restarting looks like.
  return redis_error(K::unreachable, errno_text(err));
}

RedisError io_error(int err) {
  using K = RedisError::Kind;
  if (err == 0) return redis_error(K::dropped, "the server closed the connection");
  if (err == EAGAIN || err == EWOULDBLOCK) return redis_error(K::timeout, "no answer within the timeout");
  return redis_error(K::dropped, errno_text(err));
}

RedisError quorum_error(std::size_t n, std::size_t permanent, std::string text) {
  RedisError e = redis_error(RedisError::Kind::quorum, std::move(text));
  if (n - permanent < n / 2 + 1) e.recovery = Recovery::permanent;
  return e;
}

RedisError resolve_error(int gai_error) {
  using K = RedisError::Kind;
  if (gai_error == EAI_SYSTEM) return connect_error(errno);
  // A resolver that cannot be asked now (EAI_AGAIN) may answer later; any
  // other answer is that the name is unknown.
  return redis_error(gai_error == EAI_AGAIN ? K::unreachable : K::unknown_host, ::gai_strerror(gai_error));
}

} // namespace bufferlock
