#include "redis/tls.hpp"

#include "util/dynlib.hpp"
#include "util/files.hpp"

#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <unistd.h>

#include <arpa/inet.h>

#include <cerrno>
#include <utility>

namespace bufferlock {

namespace {

// The OpenSSL 3 ABI that Debian ships as libssl3 (libcrypto's symbols are
// found through libssl's handle). Declared by the headers, never linked.
constexpr const char* libssl_name = "libssl.so.3";

// The OpenSSL functions we call, resolved once by dlsym().
#define LIBSSL_FUNCTIONS(X)                                                                                  \
  X(TLS_client_method)                                                                                       \
  X(SSL_CTX_new)                                                                                             \
  X(SSL_CTX_free)                                                                                            \
  X(SSL_CTX_ctrl)                                                                                            \
  X(SSL_CTX_set_options)                                                                                     \
  X(SSL_CTX_set_verify)                                                                                      \
  X(SSL_CTX_load_verify_locations)                                                                           \
  X(SSL_CTX_set_default_verify_paths)                                                                        \
  X(SSL_CTX_use_certificate_chain_file)                                                                      \
  X(SSL_CTX_use_PrivateKey_file)                                                                             \
  X(SSL_CTX_check_private_key)                                                                               \
  X(SSL_new)                                                                                                 \
  X(SSL_free)                                                                                                \
  X(SSL_set_fd)                                                                                              \
  X(SSL_ctrl)                                                                                                \
  X(SSL_set1_host)                                                                                           \
  X(SSL_get0_param)                                                                                          \
  X(SSL_connect)                                                                                             \
  X(SSL_read)                                                                                                \
  X(SSL_write)                                                                                               \
  X(SSL_get_error)                                                                                           \
  X(SSL_get_verify_result)                                                                                   \
  X(ERR_get_error)                                                                                           \
  X(ERR_clear_error)                                                                                         \
  X(ERR_reason_error_string)                                                                                 \
  X(X509_verify_cert_error_string)                                                                           \
  X(X509_VERIFY_PARAM_set1_ip_asc)                                                                           \
  X(OpenSSL_version)

struct Api {
  LIBSSL_FUNCTIONS(BUFFERLOCK_DYNLIB_FIELD)
  // The errno that libssl's system calls set: in a static bufferlock,
  // libssl runs on a libc of its own, whose errno is not the binary's.
  int* (*errno_location)();
};

// The loaded library, or why it could not be loaded.
using Library = DynLib<Api>;

const Library& library() {
  static const Library lib =
      load_library<Api>({libssl_name}, LIBSSL_FUNCTIONS(BUFFERLOCK_DYNLIB_NAME) "__errno_location\0",
                        {LIBSSL_FUNCTIONS(BUFFERLOCK_DYNLIB_OFFSET) offsetof(Api, errno_location)});
  return lib;
}

const Api& api() { return library().api; }

// OpenSSL's reason for the first error in its queue ("no certificate or
// crl found"), and the queue emptied.
std::string queue_reason() {
  const unsigned long e = api().ERR_get_error();
  const char* reason = e ? api().ERR_reason_error_string(e) : nullptr;
  api().ERR_clear_error();
  return reason ? reason : "not a PEM file OpenSSL can use";
}

// Whether `path` can be opened for reading; else the OS's reason.
std::optional<std::string> unreadable(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return errno_text(errno);
  ::close(fd);
  return std::nullopt;
}

TlsSetupError file_error(std::string_view option, const std::string& path, const std::string& why) {
  return TlsSetupError{std::string(option) + " " + path + ": " + why};
}

} // namespace

std::optional<TlsSetupError> tls_check_readable(const TlsFiles& files) {
  for (const auto& [option, path] : {std::pair<std::string_view, const std::string&>{"--tls-ca", files.ca},
                                     {"--tls-cert", files.cert},
                                     {"--tls-key", files.key}}) {
    if (path.empty()) continue;
    if (auto why = unreadable(path)) return file_error(option, path, *why);
  }
  return std::nullopt;
}

namespace {

struct Context {
  SSL_CTX* ctx = nullptr; // lives as long as the process: one per run
  std::optional<TlsSetupError> error;
};

Context make_context(const TlsFiles& files) {
  Context c;
  const Library& lib = library();
  if (!lib.error.empty()) {
    c.error = TlsSetupError{lib.error};
    return c;
  }
  const Api& a = lib.api;
  auto fail = [&](std::string_view option, const std::string& path, const std::string& why) {
    c.error = file_error(option, path, why);
    return c;
  };
  if ((c.error = tls_check_readable(files))) return c;
  c.ctx = a.SSL_CTX_new(a.TLS_client_method());
  if (!c.ctx) {
    c.error = TlsSetupError{"cannot set up TLS: " + queue_reason()};
    return c;
  }
  a.SSL_CTX_ctrl(c.ctx, SSL_CTRL_SET_MIN_PROTO_VERSION, TLS1_2_VERSION, nullptr);
  // Writes may finish in parts, from a buffer we keep until they do.
  a.SSL_CTX_ctrl(c.ctx, SSL_CTRL_MODE, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER,
                 nullptr);
  // A server that restarts closes without a TLS goodbye: that is the
  // connection going away (retried), not a TLS failure.
  a.SSL_CTX_set_options(c.ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
  a.SSL_CTX_set_verify(c.ctx, SSL_VERIFY_PEER, nullptr); // there is no way to turn this off
  if (!files.ca.empty()) {
    if (a.SSL_CTX_load_verify_locations(c.ctx, files.ca.c_str(), nullptr) != 1)
      return fail("--tls-ca", files.ca, queue_reason());
  } else if (a.SSL_CTX_set_default_verify_paths(c.ctx) != 1) {
    c.error = TlsSetupError{"cannot load the system's trusted certificates: " + queue_reason()};
    return c;
  }
  if (!files.cert.empty()) {
    if (a.SSL_CTX_use_certificate_chain_file(c.ctx, files.cert.c_str()) != 1)
      return fail("--tls-cert", files.cert, queue_reason());
    if (a.SSL_CTX_use_PrivateKey_file(c.ctx, files.key.c_str(), SSL_FILETYPE_PEM) != 1)
      return fail("--tls-key", files.key, queue_reason());
    if (a.SSL_CTX_check_private_key(c.ctx) != 1)
      return fail("--tls-key", files.key, "does not match --tls-cert " + files.cert);
  }
  return c;
}

Context& context(const TlsFiles* files) {
  static Context c = files ? make_context(*files) : Context{{}, TlsSetupError{"TLS was not set up"}};
  return c;
}

bool is_ip_address(const std::string& host) {
  unsigned char buf[sizeof(in6_addr)];
  return ::inet_pton(AF_INET, host.c_str(), buf) == 1 || ::inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

} // namespace

std::optional<TlsSetupError> tls_prepare(const TlsFiles& files) { return context(&files).error; }

std::optional<TlsSetupError> tls_check_ca(const std::string& path) {
  if (auto e = tls_check_readable(TlsFiles{path, {}, {}})) return e;
  if (!library().error.empty()) return std::nullopt; // the https client's own TLS library judges it
  // The rediss:// set-up on a context of its own, which is not kept.
  const Context c = make_context(TlsFiles{path, {}, {}});
  if (c.ctx) api().SSL_CTX_free(c.ctx);
  return c.error;
}

std::string tls_library_version() {
  const Library& lib = library();
  return lib.error.empty() ? lib.api.OpenSSL_version(OPENSSL_VERSION) : lib.error;
}

TlsSession::TlsSession(TlsSession&& other) noexcept
    : ssl_(std::exchange(other.ssl_, nullptr)), last_error_(other.last_error_),
      last_queue_error_(other.last_queue_error_), last_errno_(other.last_errno_) {}

TlsSession& TlsSession::operator=(TlsSession&& other) noexcept {
  if (this != &other) {
    this->~TlsSession();
    new (this) TlsSession(std::move(other));
  }
  return *this;
}

TlsSession::~TlsSession() {
  if (ssl_) api().SSL_free(static_cast<SSL*>(ssl_));
}

std::variant<TlsSession, std::string> TlsSession::start(int fd, const std::string& host) {
  Context& c = context(nullptr);
  if (c.error) return c.error->text;
  const Api& a = api();
  TlsSession s;
  SSL* ssl = a.SSL_new(c.ctx);
  if (!ssl) return "cannot start TLS: " + queue_reason();
  s.ssl_ = ssl;
  a.SSL_set_fd(ssl, fd);
  if (is_ip_address(host)) {
    // An address is checked against the certificate's IP SANs; no SNI.
    if (a.X509_VERIFY_PARAM_set1_ip_asc(a.SSL_get0_param(ssl), host.c_str()) != 1)
      return "cannot check the address " + host + ": " + queue_reason();
  } else {
    if (a.SSL_set1_host(ssl, host.c_str()) != 1)
      return "cannot check the name " + host + ": " + queue_reason();
    a.SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name, const_cast<char*>(host.c_str()));
  }
  return s;
}

namespace {

TlsSession::Want want_of(int ssl_error) {
  switch (ssl_error) {
  case SSL_ERROR_NONE: return TlsSession::Want::done;
  case SSL_ERROR_WANT_READ: return TlsSession::Want::read;
  case SSL_ERROR_WANT_WRITE: return TlsSession::Want::write;
  case SSL_ERROR_ZERO_RETURN: return TlsSession::Want::closed;
  default: return TlsSession::Want::error;
  }
}

} // namespace

TlsSession::Want TlsSession::call(const std::function<int(SSL*)>& op, std::size_t& done) {
  const Api& a = api();
  SSL* ssl = static_cast<SSL*>(ssl_);
  a.ERR_clear_error();
  int& ssl_errno = *a.errno_location();
  ssl_errno = 0;
  const int rc = op(ssl);
  done = rc > 0 ? static_cast<std::size_t>(rc) : 0;
  last_error_ = rc > 0 ? SSL_ERROR_NONE : a.SSL_get_error(ssl, rc);
  last_errno_ = ssl_errno;
  last_queue_error_ = a.ERR_get_error();
  return want_of(last_error_);
}

TlsSession::Want TlsSession::handshake() {
  std::size_t ignored = 0;
  return call([](SSL* ssl) { return api().SSL_connect(ssl); }, ignored);
}

TlsSession::Want TlsSession::write(const char* data, std::size_t n, std::size_t& done) {
  const int len = static_cast<int>(std::min<std::size_t>(n, 1 << 30));
  return call([&](SSL* ssl) { return api().SSL_write(ssl, data, len); }, done);
}

TlsSession::Want TlsSession::read(char* buf, std::size_t n, std::size_t& done) {
  const int len = static_cast<int>(std::min<std::size_t>(n, 1 << 30));
  return call([&](SSL* ssl) { return api().SSL_read(ssl, buf, len); }, done);
}

bool TlsSession::connection_lost() const { return last_error_ == SSL_ERROR_SYSCALL; }

std::string TlsSession::error_text() const {
  const Api& a = api();
  if (last_error_ == SSL_ERROR_SYSCALL) {
    // The peer went away during the TLS exchange.
    return last_errno_ ? errno_text(last_errno_)
                       : "the server closed the connection during the TLS handshake";
  }
  const char* reason = last_queue_error_ ? a.ERR_reason_error_string(last_queue_error_) : nullptr;
  std::string text = reason ? reason : "TLS error";
  const long verify = ssl_ ? a.SSL_get_verify_result(static_cast<const SSL*>(ssl_)) : X509_V_OK;
  if (verify != X509_V_OK) text += std::string(" (") + a.X509_verify_cert_error_string(verify) + ")";
  return text;
}

} // namespace bufferlock
