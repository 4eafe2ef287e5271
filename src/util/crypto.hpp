// HMAC-SHA256 and SHA-256 from OpenSSL 3's libcrypto, loaded by dlopen() the
// first time one is asked for: the one loader of libcrypto's EVP functions,
// shared by signed entries (--sign-key) and S3's request signatures, so that
// a run that needs neither loads and pays nothing.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

// libcrypto's own (opaque) types, as its headers name them.
struct evp_mac_ctx_st;
struct evp_md_ctx_st;

namespace bufferlock {

inline constexpr std::size_t sha256_size = 32;

// Empty when libcrypto is loaded (loading it on the first call), else why not
// ("cannot load libcrypto.so.3: ...", "libcrypto.so.3 has no HMAC"): for the
// caller's own message. The classes below need it empty.
const std::string& crypto_error();

// One HMAC-SHA256 being computed. A failure inside libcrypto makes finish()
// return an empty string, which matches no tag.
class HmacSha256 {
public:
  explicit HmacSha256(std::string_view key);
  ~HmacSha256();
  HmacSha256(const HmacSha256&) = delete;
  HmacSha256& operator=(const HmacSha256&) = delete;

  void update(std::string_view data);
  // The 32 raw bytes, or empty on failure; a second call is not allowed.
  std::string finish();

private:
  ::evp_mac_ctx_st* ctx_ = nullptr;
  bool failed_ = false;
};

// One SHA-256 being computed, for data that comes in runs.
class Sha256 {
public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(std::string_view data);
  // The 32 raw bytes, or empty on failure; a second call is not allowed.
  std::string finish();

private:
  ::evp_md_ctx_st* ctx_ = nullptr;
  bool failed_ = false;
};

// The whole of `data` at once (raw bytes, empty on failure).
std::string hmac_sha256(std::string_view key, std::string_view data);
std::string sha256(std::string_view data);

// Equality of two strings in a time that does not depend on where they differ
// (CRYPTO_memcmp): for comparing tags. Strings of different lengths differ.
bool crypto_equal(std::string_view a, std::string_view b);

} // namespace bufferlock
