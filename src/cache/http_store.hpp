// Entries on an HTTP server (--store http://..., SPEC §18): one object per
// entry address under the URL's path, named as the file store names its files:
//   PATH/<md5 of KEY>.entry               without inputs or outputs
//   PATH/<md5 of KEY>.<address hex>.entry with --depends or --output
//                                         (entry_address, cache/entry.hpp)
// An object holds an entry's bytes laid out as cache/remote_object.hpp
// says, header behind the body. A build's first full part starts one chunked PUT, which
// carries each part before the build goes on (an entry under one part goes
// with one PUT of known length); a build that fails or outgrows --max-entry
// abandons it, and the server keeps nothing. A hit reads it by ranged GETs
// (cache/remote_object.hpp). Neither side holds an entry in memory, and a
// torn, cut or tampered object is a miss. The store holds data only: the
// build lock is the command line's.
// Listing (--list, --drop, --gc) is WebDAV PROPFIND, Depth: 1.
#pragma once

#include "cache/remote_object.hpp"
#include "cache/object_uses.hpp"
#include "cache/store.hpp"
#include "http/client.hpp"
#include "http/url.hpp"

#include <memory>
#include <optional>
#include <variant>

namespace bufferlock {

class HttpStore final : public ObjectStore {
public:
  // `uses`: where hits record the objects' last use (the -r Redis); null
  // without -r, when --gc weighs entries by their build.
  HttpStore(StoreUrl url, HttpSettings settings, std::unique_ptr<ObjectUses> uses = nullptr);

  std::string_view name() const override { return "http"; }
  std::string location() const override { return server(); }
  std::string where(std::string_view key, const Inputs& inputs) const override;
  std::optional<SysError> drop(std::string_view key) const override;
  BuildOrError begin_build(std::string_view key, const Inputs& inputs, std::int64_t created_ns,
                           const BuildContents& what) const override;
  void after_fork() const override {
    client_.reset();
    if (uses_) uses_->after_fork();
  }

  // --gc: removes entries older than max_age (when given) and objects that
  // are no entries, then by last use (ObjectUses; without, by their build,
  // said once) those unused for max_unused and the least recently used
  // until the rest add up to at most max_size (when given).
  std::variant<GcCounts, SysError> gc(const GcPolicy& policy) const override;

  // The URL as given, password hidden.
  const std::string& server() const { return url_.display; }
  std::string object_name(std::string_view key, const Inputs& inputs = std::nullopt) const override;
  HttpClient& client() const;
  std::string object_url(const std::string& name) const { return url_.base + name; }

private:
  // Its ranged GETs.
  class Reader;
  const ObjectReader& reader() const override;
  // The names of the entry objects under the URL's path; an error that is
  // `refused` when the server answered PROPFIND with another status than
  // 207 or 404: it cannot list (list_entries, drop and gc pass that on).
  std::variant<std::vector<std::string>, SysError> objects() const;
  // The header of each entry object whose name starts with `prefix`.
  ObjectHeads heads(std::string_view prefix) const override;
  // A listing refused is named by its request.
  std::string listing_failed(const SysError& e) const override;
  // Removes object `name`; -v says so when it was there (`h`: its header
  // when known, `why`: why it goes).
  std::optional<SysError> remove(const std::string& name, const EntryHeader* h, std::string_view why) const;
  // The reason of a 401 answer to `request`, naming its status.
  std::string credentials_refused(const HttpReply& r, std::string_view request) const;

  StoreUrl url_;
  HttpSettings settings_;
  mutable std::unique_ptr<HttpClient> client_;
  std::unique_ptr<ObjectReader> reader_;
};

// The object names in a WebDAV multistatus document: the last segment of
// every href, percent-decoded (for tests).
std::vector<std::string> propfind_names(std::string_view xml);

} // namespace bufferlock
