#include "redis/connection.hpp"

#include "util/files.hpp"

#include <fcntl.h>
#include <sys/time.h>

#include <cerrno>
#include <vector>

namespace bufferlock {

namespace {

timeval to_timeval(Nanos d) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(d.count() / 1'000'000'000);
  tv.tv_usec = static_cast<suseconds_t>((d.count() % 1'000'000'000) / 1000);
  if (tv.tv_sec == 0 && tv.tv_usec == 0) tv.tv_usec = 1; // 0 would mean "no timeout"
  return tv;
}

RedisError reply_error(const redisReply* r) {
  return redis_error(RedisError::Kind::server, std::string(r->str, r->len));
}

} // namespace

RedisError RedisConnection::context_error(int saved_errno) {
  broken_ = true;
  return io_error(ctx_->err, ctx_->errstr, saved_errno);
}

RedisResult<RedisConnection> RedisConnection::open(const RedisUrl& url,
                                                   const std::optional<std::string>& password,
                                                   RedisTimeouts timeouts) {
  const timeval connect_tv = to_timeval(timeouts.connect);
  errno = 0;
  redisContext* raw = url.transport == RedisUrl::Transport::unix_socket
                          ? redisConnectUnixWithTimeout(url.socket_path.c_str(), connect_tv)
                          : redisConnectWithTimeout(url.host.c_str(), url.port, connect_tv);
  const int saved_errno = errno;
  if (raw == nullptr) return redis_error(RedisError::Kind::unreachable, "out of memory");
  RedisConnection conn(raw);
  if (raw->err) return connect_error(raw->err, raw->errstr, saved_errno);
  // hiredis 0.14 has no cloexec option: the command must not inherit the socket.
  ::fcntl(raw->fd, F_SETFD, FD_CLOEXEC);
  // hiredis' connect timeout does not bound reads: always set this one.
  // No TCP keepalive: every wait on the socket is bounded by this timeout,
  // and a held lock sends a renewal every TTL/3 anyway.
  redisSetTimeout(raw, to_timeval(timeouts.io));

  // AUTH and SELECT pipelined: one round trip.
  std::vector<std::vector<std::string>> setup;
  if (password) {
    if (url.user.empty())
      setup.push_back({"AUTH", *password});
    else
      setup.push_back({"AUTH", url.user, *password});
  }
  if (url.db != 0) setup.push_back({"SELECT", std::to_string(url.db)});
  for (const auto& cmd : setup) {
    std::vector<const char*> argv;
    std::vector<size_t> lens;
    for (const auto& a : cmd) {
      argv.push_back(a.data());
      lens.push_back(a.size());
    }
    redisAppendCommandArgv(raw, static_cast<int>(argv.size()), argv.data(), lens.data());
  }
  for (const auto& cmd : setup) {
    void* reply = nullptr;
    if (redisGetReply(raw, &reply) != REDIS_OK) return conn.context_error(errno);
    RedisReply r(static_cast<redisReply*>(reply));
    if (r->type == REDIS_REPLY_ERROR) {
      RedisError e = reply_error(r.get()); // classified by its code: LOADING heals, WRONGPASS does not
      e.text = (cmd[0] == "AUTH" ? "authentication failed: " : "cannot select the database: ") + e.text;
      return e;
    }
  }
  return conn;
}

RedisResult<RedisReply> RedisConnection::command(std::initializer_list<std::string_view> args) {
  if (broken_) return redis_error(RedisError::Kind::dropped, "connection already failed");
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  for (auto a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  errno = 0;
  void* reply = redisCommandArgv(ctx_.get(), static_cast<int>(argv.size()), argv.data(), lens.data());
  if (reply == nullptr) return context_error(errno);
  RedisReply r(static_cast<redisReply*>(reply));
  if (r->type == REDIS_REPLY_ERROR) return reply_error(r.get());
  return r;
}

void RedisConnection::set_io_timeout(Nanos timeout) {
  if (!broken_) redisSetTimeout(ctx_.get(), to_timeval(timeout));
}

} // namespace bufferlock
