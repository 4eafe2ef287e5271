#include "redis/connection.hpp"

#include "util/clock.hpp"

#include <cstdlib>

namespace bufferlock {

namespace {

RedisError reply_error(const redisReply* r) {
  return redis_error(RedisError::Kind::server, std::string(r->str, r->len));
}

// `args` in RESP, appended to `out`.
void format_command(const std::vector<std::string_view>& args, std::string& out) {
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  for (auto a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  char* cmd = nullptr;
  const int len = redisFormatCommandArgv(&cmd, static_cast<int>(argv.size()), argv.data(), lens.data());
  if (len < 0) throw std::bad_alloc();
  out.append(cmd, static_cast<std::size_t>(len));
  redisFreeCommand(cmd);
}

} // namespace

RedisConnection::RedisConnection(RedisStream stream, Nanos io_timeout)
    : stream_(std::move(stream)), reader_(redisReaderCreate()), io_timeout_(io_timeout) {
  if (!reader_) throw std::bad_alloc();
}

RedisResult<RedisConnection> RedisConnection::open(const RedisUrl& url,
                                                   const std::optional<std::string>& password,
                                                   RedisTimeouts timeouts) {
  const Nanos connect_deadline = deadline_after(timeouts.connect);
  // The TLS handshake is bounded like a command: a failed one ends within
  // connect-timeout + io-timeout (SPEC §12).
  auto stream = RedisStream::open(url, connect_deadline, connect_deadline + timeouts.io);
  if (auto* e = std::get_if<RedisError>(&stream)) return *e;
  RedisConnection conn(std::move(std::get<RedisStream>(stream)), timeouts.io);

  // AUTH and SELECT pipelined: one round trip.
  std::vector<std::vector<std::string_view>> setup;
  const std::string db = std::to_string(url.db);
  if (password) {
    if (url.user.empty())
      setup.push_back({"AUTH", *password});
    else
      setup.push_back({"AUTH", url.user, *password});
  }
  if (url.db != 0) setup.push_back({"SELECT", db});
  if (setup.empty()) return conn;
  auto replies = conn.pipeline(setup);
  for (std::size_t i = 0; i < replies.size(); ++i) {
    if (auto* e = std::get_if<RedisError>(&replies[i])) {
      RedisError err = *e; // classified by its code: LOADING heals, WRONGPASS does not
      if (err.kind == RedisError::Kind::server)
        err.text =
            (setup[i][0] == "AUTH" ? "authentication failed: " : "cannot select the database: ") + err.text;
      return err;
    }
  }
  return conn;
}

RedisError RedisConnection::fail(RedisError e) {
  broken_ = true;
  return e;
}

RedisResult<RedisReply> RedisConnection::read_reply(Nanos deadline) {
  for (;;) {
    void* reply = nullptr;
    if (redisReaderGetReply(reader_.get(), &reply) != REDIS_OK)
      return fail(redis_error(RedisError::Kind::protocol, reader_->errstr));
    if (reply) {
      RedisReply r(static_cast<redisReply*>(reply));
      if (r->type == REDIS_REPLY_ERROR) return reply_error(r.get());
      return r;
    }
    char buf[16 * 1024];
    auto got = stream_.read_some(buf, sizeof buf, deadline);
    if (auto* e = std::get_if<RedisError>(&got)) return fail(*e);
    if (redisReaderFeed(reader_.get(), buf, std::get<std::size_t>(got)) != REDIS_OK)
      return fail(redis_error(RedisError::Kind::protocol, reader_->errstr));
  }
}

std::vector<RedisResult<RedisReply>>
RedisConnection::pipeline(const std::vector<std::vector<std::string_view>>& commands) {
  const Nanos deadline = deadline_after(io_timeout_);
  std::string request;
  for (const auto& c : commands)
    format_command(c, request);
  std::optional<RedisError> failed;
  if (broken_)
    failed = redis_error(RedisError::Kind::dropped, "connection already failed");
  else if (auto e = stream_.write_all(request, deadline))
    failed = fail(*e);
  for (; unread_ > 0 && !failed && !broken_; --unread_)
    read_reply(deadline); // an error reply of one is not this caller's
  std::vector<RedisResult<RedisReply>> out;
  for (std::size_t i = 0; i < commands.size(); ++i) {
    if (!failed && broken_) failed = redis_error(RedisError::Kind::dropped, "connection already failed");
    if (failed)
      out.emplace_back(*failed);
    else
      out.push_back(read_reply(deadline));
  }
  return out;
}

std::optional<RedisError> RedisConnection::send(const std::vector<std::string_view>& args) {
  if (broken_) return redis_error(RedisError::Kind::dropped, "connection already failed");
  std::string request;
  format_command(args, request);
  if (auto e = stream_.write_all(request, deadline_after(io_timeout_))) return fail(*e);
  return std::nullopt;
}

void RedisConnection::send_unread(const std::vector<std::string_view>& args) {
  if (!send(args)) ++unread_;
}

std::optional<RedisResult<RedisReply>> RedisConnection::take_reply() {
  auto parsed = [&]() -> std::optional<RedisResult<RedisReply>> {
    void* reply = nullptr;
    if (redisReaderGetReply(reader_.get(), &reply) != REDIS_OK)
      return fail(redis_error(RedisError::Kind::protocol, reader_->errstr));
    if (!reply) return std::nullopt;
    RedisReply r(static_cast<redisReply*>(reply));
    if (r->type == REDIS_REPLY_ERROR) return reply_error(r.get());
    return r;
  };
  if (auto r = parsed()) return r;
  char buf[16 * 1024];
  // A deadline already past: one read of what has arrived, no waiting.
  auto got = stream_.read_some(buf, sizeof buf, monotonic_now());
  if (auto* e = std::get_if<RedisError>(&got)) {
    if (e->kind == RedisError::Kind::timeout) return std::nullopt;
    return fail(*e);
  }
  if (redisReaderFeed(reader_.get(), buf, std::get<std::size_t>(got)) != REDIS_OK)
    return fail(redis_error(RedisError::Kind::protocol, reader_->errstr));
  return parsed();
}

RedisResult<RedisReply> RedisConnection::command(std::initializer_list<std::string_view> args) {
  auto replies = pipeline({std::vector<std::string_view>(args)});
  return std::move(replies.front());
}

} // namespace bufferlock
