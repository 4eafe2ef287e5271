#include "cache/sign.hpp"

#include "util/crypto.hpp"
#include "util/fd.hpp"
#include "util/files.hpp"
#include "util/io.hpp"
#include "util/le.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace bufferlock {

namespace {

// An entry's tag: HMAC-SHA256 with the key of --sign-key.
class Hmac final : public EntryMac {
public:
  explicit Hmac(const std::string& key) : mac_(key) {}

  void update(const char* data, std::size_t len) override { mac_.update({data, len}); }

  std::string finish() override {
    std::string tag = mac_.finish();
    return tag.size() == entry_tag_size ? tag : std::string{}; // empty matches no tag; seals nothing servable
  }

private:
  HmacSha256 mac_;
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
  if (!crypto_error().empty()) return crypto_error();
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
  return tag.size() == entry_tag_size && crypto_equal(tag, h.signature);
}

} // namespace bufferlock
