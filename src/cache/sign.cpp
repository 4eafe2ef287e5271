#include "cache/sign.hpp"

#include "util/dynlib.hpp"
#include "util/fd.hpp"
#include "util/files.hpp"
#include "util/io.hpp"
#include "util/le.hpp"

#include <fcntl.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace bufferlock {

namespace {

// OpenSSL 3's libcrypto as Debian ships it (libssl3). Declared by the
// headers, never linked: loaded only when a key is given.
constexpr const char* libcrypto_name = "libcrypto.so.3";

// The libcrypto functions we call, resolved once by dlsym().
#define LIBCRYPTO_FUNCTIONS(X)                                                                               \
  X(EVP_MAC_fetch)                                                                                           \
  X(EVP_MAC_CTX_new)                                                                                         \
  X(EVP_MAC_CTX_free)                                                                                        \
  X(EVP_MAC_init)                                                                                            \
  X(EVP_MAC_update)                                                                                          \
  X(EVP_MAC_final)                                                                                           \
  X(OSSL_PARAM_construct_utf8_string)                                                                        \
  X(OSSL_PARAM_construct_end)                                                                                \
  X(CRYPTO_memcmp)

struct Api {
  LIBCRYPTO_FUNCTIONS(BUFFERLOCK_DYNLIB_FIELD)
};

struct Library {
  Api api{};
  EVP_MAC* hmac = nullptr; // fetched once, kept for the process
  std::string error;       // why it could not be loaded
};

const Library& library() {
  static const Library lib = [] {
    auto so = load_library<Api>({libcrypto_name}, LIBCRYPTO_FUNCTIONS(BUFFERLOCK_DYNLIB_NAME),
                                {LIBCRYPTO_FUNCTIONS(BUFFERLOCK_DYNLIB_OFFSET)});
    Library l{so.api, nullptr, std::move(so.error)};
    if (!l.error.empty()) return l;
    l.hmac = l.api.EVP_MAC_fetch(nullptr, "HMAC", nullptr);
    if (!l.hmac) l.error = std::string(libcrypto_name) + " has no HMAC";
    return l;
  }();
  return lib;
}

class Hmac final : public EntryMac {
public:
  explicit Hmac(const std::string& key) {
    const Api& a = library().api;
    ctx_ = a.EVP_MAC_CTX_new(library().hmac);
    char digest[] = "SHA256";
    OSSL_PARAM params[] = {a.OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                           a.OSSL_PARAM_construct_end()};
    if (!ctx_ ||
        a.EVP_MAC_init(ctx_, reinterpret_cast<const unsigned char*>(key.data()), key.size(), params) != 1)
      failed_ = true;
  }
  ~Hmac() override {
    if (ctx_) library().api.EVP_MAC_CTX_free(ctx_);
  }
  Hmac(const Hmac&) = delete;
  Hmac& operator=(const Hmac&) = delete;

  void update(const char* data, std::size_t len) override {
    if (!failed_ && library().api.EVP_MAC_update(ctx_, reinterpret_cast<const unsigned char*>(data), len) != 1)
      failed_ = true;
  }

  std::string finish() override {
    std::string tag(entry_tag_size, '\0');
    std::size_t n = 0;
    if (failed_ ||
        library().api.EVP_MAC_final(ctx_, reinterpret_cast<unsigned char*>(tag.data()), &n, tag.size()) != 1 ||
        n != entry_tag_size)
      return {}; // matches no tag; seals nothing servable
    return tag;
  }

private:
  EVP_MAC_CTX* ctx_ = nullptr;
  bool failed_ = false;
};

// The header as the tag covers it: the tag zeroed, then its length.
void add_header(EntryMac& mac, EntryHeader h) {
  h.signature.assign(entry_tag_size, '\0');
  std::string head = encode_header(h);
  put_le<std::uint64_t>(head, head.size());
  mac.update(head.data(), head.size());
}

} // namespace

std::variant<EntrySigner, std::string> EntrySigner::from_file(const std::string& path) {
  auto read = read_secret_file(path);
  if (read.index() == 1) return std::get<1>(std::move(read));
  if (!library().error.empty()) return library().error;
  return EntrySigner(std::get<0>(std::move(read)));
}

std::unique_ptr<EntryMac> EntrySigner::begin() const { return std::make_unique<Hmac>(key_); }

void EntrySigner::seal(EntryMac& mac, EntryHeader& h) {
  add_header(mac, h);
  h.signature = mac.finish();
  if (h.signature.size() != entry_tag_size) h.signature.assign(entry_tag_size, '\0'); // fails to verify
}

bool EntrySigner::matches(EntryMac& mac, const EntryHeader& h) {
  if (h.signature.size() != entry_tag_size) return false;
  add_header(mac, h);
  const std::string tag = mac.finish();
  return tag.size() == entry_tag_size &&
         library().api.CRYPTO_memcmp(tag.data(), h.signature.data(), entry_tag_size) == 0;
}

} // namespace bufferlock
