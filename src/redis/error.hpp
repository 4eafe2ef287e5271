// What can go wrong talking to Redis, and whether waiting can mend it. The
// classification is made here and nowhere else, so that every Redis path
// (run, acquire/release/extend, status, cache locks, and later transports and
// topologies) retries the same errors (SPEC §7).
#pragma once

#include "util/recovery.hpp"

#include <string>
#include <string_view>

namespace bufferlock {

struct RedisError {
  enum class Kind {
    unreachable,    // connect refused, no route, no socket file: a server (re)starting
    dropped,        // an open connection closed or reset by the server
    timeout,        // no connection or no answer within the timeouts
    unknown_host,   // the host name does not resolve
    denied,         // the OS refused access (a unix socket's permissions)
    server,         // an error reply (text begins with its code: READONLY, WRONGPASS, ...)
    protocol,       // a reply that is not what the command returns
    tls,            // a TLS handshake or session that failed (a certificate, not TLS)
    redirect,       // cluster nodes that redirect a key in a loop (MOVED/ASK beyond the hop limit)
    unknown_master, // sentinels that do not know the master named in the URL
    quorum,         // no majority of the quorum's servers could be reached
  };
  Kind kind;
  std::string text; // the reason, never with the password
  Recovery recovery;

  bool transient() const { return recovery == Recovery::transient; }
};

// The one classification. Error replies are transient when the server says
// it is not ready yet or not a master now (LOADING, BUSY, READONLY,
// MASTERDOWN, TRYAGAIN, CLUSTERDOWN) and permanent otherwise (WRONGPASS,
// NOAUTH, NOPERM, ERR ...: a password, a database or a script refused).
Recovery classify(RedisError::Kind kind, std::string_view text);

// Whether an error reply is the server's ACL refusing a command or a key to
// our user: NOPERM, or a script's command refused ("The user executing the
// script can't ..."). Permanent; a wait must not poll around it.
bool is_acl_refusal(const RedisError& e);

// A RedisError with its recovery filled in by classify(); an ACL refusal's
// text ends with a pointer to the rights bufferlock needs, since Redis names
// neither the command a script was refused nor the key.
RedisError redis_error(RedisError::Kind kind, std::string text);

// The error of a failed connect(2) or of socket I/O, by errno (0: the
// server closed the connection).
RedisError connect_error(int err);
RedisError io_error(int err);

// The error of a quorum of `n` servers that reached no majority: transient
// unless so many failed for good (`permanent` of them: a password, a
// database) that no majority ever can be.
RedisError quorum_error(std::size_t n, std::size_t permanent, std::string text);

// The error of a failed getaddrinfo(3), by its return value.
RedisError resolve_error(int gai_error);

} // namespace bufferlock
