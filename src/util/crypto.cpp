#include "util/crypto.hpp"

#include "util/dynlib.hpp"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

namespace bufferlock {

namespace {

// OpenSSL 3's libcrypto as Debian ships it (libssl3). Declared by the
// headers, never linked: loaded only when a digest or a MAC is asked for.
constexpr const char* libcrypto_name = "libcrypto.so.3";

// The libcrypto functions we call, resolved once by dlsym().
#define LIBCRYPTO_FUNCTIONS(X)                                                                               \
  X(EVP_MAC_fetch)                                                                                           \
  X(EVP_MAC_CTX_new)                                                                                         \
  X(EVP_MAC_CTX_free)                                                                                        \
  X(EVP_MAC_init)                                                                                            \
  X(EVP_MAC_update)                                                                                          \
  X(EVP_MAC_final)                                                                                           \
  X(EVP_MD_fetch)                                                                                            \
  X(EVP_MD_CTX_new)                                                                                          \
  X(EVP_MD_CTX_free)                                                                                         \
  X(EVP_DigestInit_ex)                                                                                       \
  X(EVP_DigestUpdate)                                                                                        \
  X(EVP_DigestFinal_ex)                                                                                      \
  X(OSSL_PARAM_construct_utf8_string)                                                                        \
  X(OSSL_PARAM_construct_end)                                                                                \
  X(CRYPTO_memcmp)

struct Api {
  LIBCRYPTO_FUNCTIONS(BUFFERLOCK_DYNLIB_FIELD)
};

struct Library {
  Api api{};
  EVP_MAC* hmac = nullptr; // fetched once, kept for the process
  EVP_MD* sha256 = nullptr;
  std::string error; // why it could not be loaded
};

const Library& library() {
  static const Library lib = [] {
    auto so = load_library<Api>({libcrypto_name}, LIBCRYPTO_FUNCTIONS(BUFFERLOCK_DYNLIB_NAME),
                                {LIBCRYPTO_FUNCTIONS(BUFFERLOCK_DYNLIB_OFFSET)});
    Library l{so.api, nullptr, nullptr, std::move(so.error)};
    if (!l.error.empty()) return l;
    l.hmac = l.api.EVP_MAC_fetch(nullptr, "HMAC", nullptr);
    l.sha256 = l.api.EVP_MD_fetch(nullptr, "SHA256", nullptr);
    if (!l.hmac) l.error = std::string(libcrypto_name) + " has no HMAC";
    else if (!l.sha256) l.error = std::string(libcrypto_name) + " has no SHA256";
    return l;
  }();
  return lib;
}

const Api& api() { return library().api; }

const unsigned char* bytes(std::string_view s) { return reinterpret_cast<const unsigned char*>(s.data()); }

} // namespace

const std::string& crypto_error() { return library().error; }

HmacSha256::HmacSha256(std::string_view key) {
  const Api& a = api();
  ctx_ = a.EVP_MAC_CTX_new(library().hmac);
  char digest[] = "SHA256";
  OSSL_PARAM params[] = {a.OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                         a.OSSL_PARAM_construct_end()};
  if (!ctx_ || a.EVP_MAC_init(ctx_, bytes(key), key.size(), params) != 1) failed_ = true;
}

HmacSha256::~HmacSha256() {
  if (ctx_) api().EVP_MAC_CTX_free(ctx_);
}

void HmacSha256::update(std::string_view data) {
  if (!failed_ && api().EVP_MAC_update(ctx_, bytes(data), data.size()) != 1) failed_ = true;
}

std::string HmacSha256::finish() {
  std::string tag(sha256_size, '\0');
  std::size_t n = 0;
  if (failed_ || api().EVP_MAC_final(ctx_, reinterpret_cast<unsigned char*>(tag.data()), &n, tag.size()) != 1 ||
      n != sha256_size)
    return {};
  return tag;
}

Sha256::Sha256() {
  ctx_ = api().EVP_MD_CTX_new();
  if (!ctx_ || api().EVP_DigestInit_ex(ctx_, library().sha256, nullptr) != 1) failed_ = true;
}

Sha256::~Sha256() {
  if (ctx_) api().EVP_MD_CTX_free(ctx_);
}

void Sha256::update(std::string_view data) {
  if (!failed_ && api().EVP_DigestUpdate(ctx_, data.data(), data.size()) != 1) failed_ = true;
}

std::string Sha256::finish() {
  std::string digest(sha256_size, '\0');
  unsigned n = 0;
  if (failed_ || api().EVP_DigestFinal_ex(ctx_, reinterpret_cast<unsigned char*>(digest.data()), &n) != 1 ||
      n != sha256_size)
    return {};
  return digest;
}

std::string hmac_sha256(std::string_view key, std::string_view data) {
  HmacSha256 mac(key);
  mac.update(data);
  return mac.finish();
}

std::string sha256(std::string_view data) {
  Sha256 digest;
  digest.update(data);
  return digest.finish();
}

bool crypto_equal(std::string_view a, std::string_view b) {
  return a.size() == b.size() && api().CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

} // namespace bufferlock
