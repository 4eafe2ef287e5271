// RESP replies as they reach our code: the input is what a server sends on a
// unix socket, read through our stream and hiredis' redisReader by
// RedisConnection, and interpreted by RedisLock (acquire, status, release,
// extend; AUTH and SELECT first when the first byte asks for them). A thread
// of this process plays the server: for every connection it writes the
// input, then ends its side, so nothing waits on a timeout.
#include "fuzz.hpp"
#include "lock/redis_lock.hpp"
#include "util/diag.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <mutex>
#include <thread>

using namespace bufferlock;

namespace {

class FakeServer {
public:
  FakeServer() {
    char dir[] = "/tmp/bl-resp-fuzz.XXXXXX";
    fuzz::check(::mkdtemp(dir) != nullptr, "mkdtemp");
    dir_ = dir;
    path_ = dir_ + "/s";
    listener_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path_.c_str(), sizeof addr.sun_path - 1);
    fuzz::check(::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0, "bind");
    fuzz::check(::listen(listener_, 16) == 0, "listen");
    std::thread([this] { serve(); }).detach();
  }

  // Runs at exit (libFuzzer's and the replay's): every run used to leave its
  // directory behind. The thread stays blocked in accept(); only names go.
  ~FakeServer() {
    ::unlink(path_.c_str());
    ::rmdir(dir_.c_str());
  }
  FakeServer(const FakeServer&) = delete;
  FakeServer& operator=(const FakeServer&) = delete;

  const std::string& path() const { return path_; }

  // What every connection from now on is sent; closes the connections of the
  // input before (their client has finished with them).
  void set_reply(std::string_view bytes) {
    const std::lock_guard lock(mutex_);
    reply_.assign(bytes);
    for (const int fd : open_)
      ::close(fd);
    open_.clear();
  }

private:
  void serve() {
    for (;;) {
      const int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      const std::lock_guard lock(mutex_);
      std::string_view left = reply_;
      while (!left.empty()) {
        const ssize_t n = ::write(fd, left.data(), left.size());
        if (n <= 0) break;
        left.remove_prefix(static_cast<std::size_t>(n));
      }
      ::shutdown(fd, SHUT_WR); // the client reads the input, then EOF
      open_.push_back(fd);     // closed later: unread requests would reset it
    }
  }

  std::string dir_;
  std::string path_;
  int listener_ = -1;
  std::mutex mutex_;
  std::string reply_;
  std::vector<int> open_;
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // The server's writes must fit in the socket buffer before the client reads.
  if (size < 1 || size > 64 * 1024) return 0;
  static FakeServer server;
  diag::set_verbosity(diag::Verbosity::quiet);
  const std::uint8_t mode = data[0];
  server.set_reply(fuzz::as_text(data + 1, size - 1));

  RedisLockSettings settings;
  const auto url = parse_redis_url("unix://" + server.path() + ((mode & 1) != 0 ? "?db=3" : ""));
  settings.url = std::get<RedisUrl>(url);
  if ((mode & 2) != 0) settings.password = "secret";
  settings.ttl = std::chrono::seconds(5);

  RedisLock lock(settings, "fuzz");
  switch ((mode >> 2) % 5) {
  case 0: {
    const Outcome o = lock.acquire(Nanos(0), OnError::stop);
    if (o.status == AcquireStatus::acquired) lock.release();
    break;
  }
  case 1:
    (void)lock.status();
    break;
  case 2:
    lock.use_token("0123456789abcdef0123456789abcdef");
    (void)lock.release_token();
    break;
  case 3:
    lock.use_token("0123456789abcdef0123456789abcdef");
    (void)lock.extend_token();
    break;
  default: // several replies on one connection
    if (lock.acquire(Nanos(0), OnError::stop).status != AcquireStatus::acquired) break;
    (void)lock.extend_token();
    (void)lock.status();
    (void)lock.release_token();
    break;
  }
  return 0;
}
