#include "redis/stream.hpp"

#include "util/clock.hpp"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cerrno>
#include <cstring>
#include <array>
#include <memory>

namespace bufferlock {

namespace {

using K = RedisError::Kind;

struct AddrinfoDeleter {
  void operator()(addrinfo* a) const { ::freeaddrinfo(a); }
};

// A new non-blocking socket connecting to `addr`: connected, in progress, or the errno.
std::variant<UniqueFd, int> start_connect(int family, int protocol, const sockaddr* addr, socklen_t len) {
  UniqueFd fd(::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, protocol));
  if (!fd) return errno;
  if (::connect(fd.get(), addr, len) != 0 && errno != EINPROGRESS) return errno;
  return fd;
}

// An IPv4 or IPv6 socket address's family, port and address; family 0 for
// any other.
struct Endpoint {
  sa_family_t family = 0;
  in_port_t port = 0;
  std::array<unsigned char, sizeof(in6_addr)> addr{};
  bool operator==(const Endpoint&) const = default;
};

Endpoint endpoint(const sockaddr_storage& a) {
  Endpoint e;
  if (a.ss_family == AF_INET) {
    sockaddr_in in{};
    std::memcpy(&in, &a, sizeof in);
    e.port = in.sin_port;
    std::memcpy(e.addr.data(), &in.sin_addr, sizeof in.sin_addr);
  } else if (a.ss_family == AF_INET6) {
    sockaddr_in6 in6{};
    std::memcpy(&in6, &a, sizeof in6);
    e.port = in6.sin6_port;
    std::memcpy(e.addr.data(), &in6.sin6_addr, sizeof in6.sin6_addr);
  } else {
    return e;
  }
  e.family = a.ss_family;
  return e;
}

} // namespace

bool connected_to_itself(int fd) {
  sockaddr_storage self{}, peer{};
  socklen_t self_len = sizeof self, peer_len = sizeof peer;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&self), &self_len) != 0 ||
      ::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0)
    return false;
  const Endpoint local = endpoint(self);
  return local.family != 0 && local == endpoint(peer);
}

std::optional<RedisError> RedisStream::wait_for(short events, Nanos deadline, bool connecting) {
  for (;;) {
    const Nanos left = deadline - monotonic_now();
    if (left.count() <= 0)
      return redis_error(K::timeout, connecting ? "connect timed out" : "no answer within the timeout");
    pollfd p{fd_.get(), events, 0};
    const timespec ts = to_timespec(left);
    const int n = ::ppoll(&p, 1, &ts, nullptr);
    if (n > 0) return std::nullopt; // ready, or an error the next call reports
    if (n < 0 && errno != EINTR) return io_error(errno);
  }
}

std::variant<RedisStream, RedisError> RedisStream::open(const RedisUrl& url, Nanos connect_deadline,
                                                        Nanos handshake_deadline) {
  RedisStream s;
  std::optional<RedisError> last;
  // Waits for the connect in progress on s.fd_; a failure is kept in `last`.
  auto finish_connect = [&]() -> bool {
    if (auto e = s.wait_for(POLLOUT, connect_deadline, true)) {
      last = e;
      return false;
    }
    int err = 0;
    socklen_t len = sizeof err;
    if (::getsockopt(s.fd_.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    if (err != 0) last = connect_error(err);
    return err == 0;
  };

  if (url.transport == RedisUrl::Transport::unix_socket) {
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    if (url.socket_path.size() >= sizeof sa.sun_path) return redis_error(K::denied, "socket path too long");
    std::memcpy(sa.sun_path, url.socket_path.data(), url.socket_path.size());
    auto fd = start_connect(AF_UNIX, 0, reinterpret_cast<const sockaddr*>(&sa), sizeof sa);
    if (auto* err = std::get_if<int>(&fd)) return connect_error(*err);
    s.fd_ = std::move(std::get<UniqueFd>(fd));
    if (!finish_connect()) return *last;
    return s;
  }

  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* raw = nullptr;
  const std::string port = std::to_string(url.port);
  const int gai = ::getaddrinfo(url.host.c_str(), port.c_str(), &hints, &raw);
  const std::unique_ptr<addrinfo, AddrinfoDeleter> list(raw);
  if (gai != 0) return resolve_error(gai);
  for (const addrinfo* ai = list.get(); ai; ai = ai->ai_next) {
    auto fd = start_connect(ai->ai_family, ai->ai_protocol, ai->ai_addr, ai->ai_addrlen);
    if (auto* err = std::get_if<int>(&fd)) {
      last = connect_error(*err);
      continue;
    }
    s.fd_ = std::move(std::get<UniqueFd>(fd));
    if (finish_connect()) {
      if (!connected_to_itself(s.fd_.get())) break;
      last = connect_error(ECONNREFUSED); // what it is: nobody listens there
    }
    s.fd_.reset();
    if (last && last->kind == K::timeout) break; // the deadline is gone for the others too
  }
  if (!s.fd_) return last.value_or(redis_error(K::unknown_host, "no address"));
  const int one = 1;
  ::setsockopt(s.fd_.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);

  if (!url.tls) return s;
  auto session = TlsSession::start(s.fd_.get(), url.host);
  if (auto* why = std::get_if<std::string>(&session)) return redis_error(K::tls, *why);
  s.tls_ = std::move(std::get<TlsSession>(session));
  for (;;) {
    const TlsSession::Want want = s.tls_->handshake();
    if (want == TlsSession::Want::done) return s;
    if (want == TlsSession::Want::read || want == TlsSession::Want::write) {
      if (auto e =
              s.wait_for(want == TlsSession::Want::write ? POLLOUT : POLLIN, handshake_deadline, false)) {
        // A plaintext server reads the ClientHello as a command and waits for more.
        e->text = "TLS handshake: " + e->text + " (is it a TLS port?)";
        return *e;
      }
      continue;
    }
    if (s.tls_->connection_lost()) return redis_error(K::dropped, s.tls_->error_text());
    return redis_error(K::tls, "TLS handshake failed: " + s.tls_->error_text());
  }
}

RedisError RedisStream::closed_error() const {
  RedisError e = io_error(0);
  // A server that wants a client certificate closes a session without one
  // right after the handshake; a restarting one looks the same, so the
  // error stays one that a wait retries.
  if (tls_ && !tls_answered_) e.text += " before answering over TLS (does it require --tls-cert?)";
  return e;
}

std::optional<RedisError> RedisStream::write_all(std::string_view data, Nanos deadline) {
  while (!data.empty()) {
    std::size_t done = 0;
    short wait = POLLOUT;
    if (tls_) {
      switch (tls_->write(data.data(), data.size(), done)) {
      case TlsSession::Want::done: break;
      case TlsSession::Want::read: wait = POLLIN; break;
      case TlsSession::Want::write: break;
      case TlsSession::Want::closed: return closed_error();
      case TlsSession::Want::error:
        return tls_->connection_lost() ? closed_error() : redis_error(K::tls, tls_->error_text());
      }
    } else {
      const ssize_t n = ::send(fd_.get(), data.data(), data.size(), MSG_NOSIGNAL);
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return io_error(errno);
      done = n > 0 ? static_cast<std::size_t>(n) : 0;
    }
    data.remove_prefix(done);
    if (!data.empty() && done == 0)
      if (auto e = wait_for(wait, deadline, false)) return e;
  }
  return std::nullopt;
}

std::variant<std::size_t, RedisError> RedisStream::read_some(char* buf, std::size_t n, Nanos deadline) {
  for (;;) {
    short wait = POLLIN;
    if (tls_) {
      std::size_t done = 0;
      switch (tls_->read(buf, n, done)) {
      case TlsSession::Want::done: tls_answered_ = true; return done;
      case TlsSession::Want::read: break;
      case TlsSession::Want::write: wait = POLLOUT; break;
      case TlsSession::Want::closed: return closed_error();
      case TlsSession::Want::error:
        // A server that refuses our client certificate may say so here, in
        // an alert after the handshake (TLS 1.3): TLS failing, not a restart.
        return tls_->connection_lost() ? closed_error() : redis_error(K::tls, tls_->error_text());
      }
    } else {
      const ssize_t got = ::recv(fd_.get(), buf, n, 0);
      if (got > 0) return static_cast<std::size_t>(got);
      if (got == 0) return io_error(0);
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return io_error(errno);
    }
    if (auto e = wait_for(wait, deadline, false)) return *e;
  }
}

} // namespace bufferlock
