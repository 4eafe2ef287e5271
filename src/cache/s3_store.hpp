// Entries in an S3 bucket (--store s3://BUCKET/PREFIX, SPEC §19): one object
// per entry address under PREFIX/, named as the http store names its
// objects (<md5 of KEY>[.<address hex>].entry) and laid out as they are
// (cache/http_store.hpp): body | header | trailer | footer, so that a build
// sends its body while it is made. Requests are signed (s3/client.hpp).
//
// An entry up to one part (part_size) goes up as one PUT once the build
// is over; a larger one as a multipart upload begun with its first full
// part, each part sent before the build goes on (one part in flight: the
// build's memory is one part and libcurl's buffers). Parts are large
// because a server's multipart cost grows with their number (s3rver
// stores each part, then copies them all into the object), and one in
// flight because a second one measured no faster there (bench/s3.sh's
// note); completed by
// publish(), aborted when the build fails, outgrows --max-entry, is
// stopped by a signal or loses its lock: no object a reader could take for
// an entry, no parts left behind. Object bodies are sent UNSIGNED-PAYLOAD
// (the entry's own checksums are verified on every read); the small XML
// bodies are signed with their SHA-256.
//
// A hit reads the tail with a suffix range, then the body with a range
// into an unnamed file behind the header, verified there before its first
// byte is served. 404, and 403 but for a refused key or signature (an IAM
// policy without s3:ListBucket answers 403 for a missing key), are misses.
// Listing (--list, --drop, --gc) is ListObjectsV2; an object under PREFIX
// that is not named as an entry, or whose tail is no entry's, is none.
// Objects go by DELETE one at a time, by DeleteObjects (1,000 keys a
// request) when more go at once.
#pragma once

#include "cache/remote_object.hpp"
#include "cache/store.hpp"
#include "s3/client.hpp"

#include <memory>
#include <optional>
#include <variant>

namespace bufferlock {

class S3Store final : public ObjectStore {
public:
  // S3's smallest part is 5 MiB; one part is held in memory by a build
  // (peak RSS about 50 MiB, under the 64 MiB bound).
  static constexpr std::size_t part_size = 32 * 1024 * 1024;

  // `uses`: where hits record their last use (the -r Redis), if anywhere.
  explicit S3Store(s3::Settings settings, std::unique_ptr<ObjectUses> uses = nullptr);

  std::string_view name() const override { return "s3"; }
  std::string location() const override { return display_; }
  std::string where(std::string_view key, const Inputs& inputs) const override;
  std::optional<SysError> drop(std::string_view key) const override;
  BuildOrError begin_build(std::string_view key, const Inputs& inputs, std::int64_t created_ns,
                           const BuildContents& what) const override;
  std::variant<GcCounts, SysError> gc(const GcPolicy& policy) const override;
  void after_fork() const override {
    client_.reset();
    if (uses_) uses_->after_fork();
  }

  // The object key of an entry: PREFIX + its name.
  std::string object_name(std::string_view key, const Inputs& inputs = std::nullopt) const override;
  s3::Client& client() const { return client_; }

private:
  class Reader;
  const ObjectReader& reader() const override { return *reader_; }
  ObjectHeads heads(std::string_view start) const override;
  // Removes `doomed` (each with why it goes), saying each one removed.
  struct Doomed {
    ObjectHead head;
    std::string why;
  };
  std::optional<SysError> remove(const std::vector<Doomed>& doomed) const;
  std::optional<SysError> remove_one(const Doomed& d) const;
  std::optional<SysError> remove_batch(const std::vector<Doomed>& doomed) const;
  void say_gone(const Doomed& d) const;

  std::string display_; // s3://BUCKET/PREFIX
  mutable s3::Client client_;
  std::unique_ptr<ObjectReader> reader_;
};

} // namespace bufferlock
