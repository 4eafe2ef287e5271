// TLS for Redis connections through OpenSSL (SPEC §12). libssl is loaded
// with dlopen() the first time a rediss:// URL needs it: linked in, even
// statically, it would cost every run start-up work (ARCHITECTURE.md).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

struct ssl_st; // OpenSSL's SSL, whose header only tls.cpp includes

namespace bufferlock {

// The files of --tls-ca, --tls-cert and --tls-key; empty: not given.
struct TlsFiles {
  std::string ca;
  std::string cert;
  std::string key;

  bool operator==(const TlsFiles&) const = default;
};

// A failure of the local TLS set-up: a file that cannot be read or parsed
// (a usage error), or OpenSSL that cannot be loaded.
struct TlsSetupError {
  std::string text; // names the option or the file
};

// Whether every file given can be opened for reading: the checks that need
// no OpenSSL, so a command line can be judged without loading it.
std::optional<TlsSetupError> tls_check_readable(const TlsFiles& files);

// Loads OpenSSL and builds the one client context of this process from
// `files`: TLS 1.2 or newer, peer verification against the system's CAs or
// files.ca, the client certificate and key when given. Later calls return
// the first result. Called once a run is known to talk TLS, before its
// first connection (and before any lock), not while parsing.
std::optional<TlsSetupError> tls_prepare(const TlsFiles& files);

// Whether `path` can serve as --tls-ca for a server that another library
// talks to (the https store): readable, and PEM certificates that OpenSSL
// parses. The process's own context is left alone; without OpenSSL, only
// whether the file can be read.
std::optional<TlsSetupError> tls_check_ca(const std::string& path);

// One TLS session over a connected, non-blocking socket. Move-only.
class TlsSession {
public:
  TlsSession() = default;
  TlsSession(TlsSession&& other) noexcept;
  TlsSession& operator=(TlsSession&& other) noexcept;
  TlsSession(const TlsSession&) = delete;
  TlsSession& operator=(const TlsSession&) = delete;
  ~TlsSession();

  // What the non-blocking call needs before it can go on.
  enum class Want { done, read, write, error, closed };

  // Starts a session on `fd` that must present a certificate for `host` (a
  // DNS name, sent as SNI too, or an IP address). tls_prepare() first.
  static std::variant<TlsSession, std::string> start(int fd, const std::string& host);

  Want handshake();
  // Bytes written or read go to `done`; Want::done when some were.
  Want write(const char* data, std::size_t n, std::size_t& done);
  Want read(char* buf, std::size_t n, std::size_t& done);

  // Why the last call returned Want::error: OpenSSL's reason, with the
  // certificate verification result when that failed.
  std::string error_text() const;
  // Whether that error was the connection going away (a server restarting)
  // rather than TLS itself failing (a certificate, a protocol mismatch).
  bool connection_lost() const;

private:
  // Runs one non-blocking OpenSSL call on the session and keeps its errors.
  Want call(const std::function<int(::ssl_st*)>& op, std::size_t& done);

  void* ssl_ = nullptr; // SSL*
  int last_error_ = 0;  // SSL_get_error of the last call
  unsigned long last_queue_error_ = 0;
  int last_errno_ = 0;
};

// "OpenSSL 3.0.x ..." of the library that would be loaded, or why none can be.
std::string tls_library_version();

} // namespace bufferlock
