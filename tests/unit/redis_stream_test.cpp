#include "redis/stream.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

using namespace bufferlock;

namespace {

sockaddr_in loopback(in_port_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = port;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

// A TCP socket bound to 127.0.0.1 on a port the kernel picks; its address.
UniqueFd bound_socket(sockaddr_in& where) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  where = loopback(0);
  socklen_t len = sizeof where;
  if (!fd || ::bind(fd.get(), reinterpret_cast<const sockaddr*>(&where), sizeof where) != 0 ||
      ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&where), &len) != 0)
    return UniqueFd();
  return fd;
}

} // namespace

// What a connect to a loopback port nobody listens on does when the kernel
// picks that same port as its source: TCP's simultaneous open connects the
// socket to itself. Made here on purpose, by connecting a socket to the
// address it is bound to.
TEST(RedisStream, ASocketConnectedToItselfIsSeen) {
  sockaddr_in self{};
  UniqueFd fd = bound_socket(self);
  ASSERT_TRUE(fd);
  ASSERT_EQ(::connect(fd.get(), reinterpret_cast<const sockaddr*>(&self), sizeof self), 0) << errno;
  EXPECT_TRUE(connected_to_itself(fd.get()));
}

TEST(RedisStream, AConnectionToAListenerIsNotToItself) {
  sockaddr_in at{};
  UniqueFd listener = bound_socket(at);
  ASSERT_TRUE(listener);
  ASSERT_EQ(::listen(listener.get(), 1), 0);
  UniqueFd client(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_TRUE(client);
  ASSERT_EQ(::connect(client.get(), reinterpret_cast<const sockaddr*>(&at), sizeof at), 0) << errno;
  EXPECT_FALSE(connected_to_itself(client.get()));
  UniqueFd accepted(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
  ASSERT_TRUE(accepted);
  EXPECT_FALSE(connected_to_itself(accepted.get()));
}

TEST(RedisStream, NotConnectedOrNotInetIsNotToItself) {
  sockaddr_in at{};
  UniqueFd unconnected = bound_socket(at);
  ASSERT_TRUE(unconnected);
  EXPECT_FALSE(connected_to_itself(unconnected.get()));
  int pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
  UniqueFd a(pair[0]), b(pair[1]);
  EXPECT_FALSE(connected_to_itself(a.get()));
}
