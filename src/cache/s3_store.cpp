#include "cache/s3_store.hpp"

#include "cache/streamed_build.hpp"
#include "messages.hpp"
#include "util/clock.hpp"
#include "util/md5.hpp"

#include <algorithm>

namespace bufferlock {

namespace {

constexpr int most_parts = 10000; // S3's limit

// A build sent as it is made (s3_store.hpp).
class S3Build final : public StreamedBuild {
public:
  S3Build(const S3Store& store, std::string_view key, const Inputs& inputs, std::int64_t created_ns,
          const BuildContents& what)
      : StreamedBuild(store, key, inputs, created_ns, what, S3Store::part_size), store_(store),
        object_(store.object_name(key, entry_address(inputs, what.outputs))) {}

  // Not completed: the upload goes, parts and all.
  ~S3Build() override { abort(); }

private:
  bool send_part(std::string& p) override {
    if (upload_id_.empty()) {
      const s3::Reply r = store_.client().begin_upload(object_, upload_id_);
      if (!r.ok()) return failed(r);
    }
    if (etags_.size() + 1 >= most_parts) {
      fail(SysError{store_.location(), "the entry needs more than " + std::to_string(most_parts) + " parts"});
      return false;
    }
    std::string etag;
    const s3::Reply r = store_.client().send_part(object_, upload_id_, static_cast<int>(etags_.size() + 1), p, etag);
    if (!r.ok()) return failed(r);
    etags_.push_back(std::move(etag));
    return true;
  }

  std::optional<SysError> finish(std::string& last_part, const std::string& head,
                                 const std::string& trailer) override {
    last_part += head;
    last_part += trailer;
    last_part += encode_object_footer(head.size());
    if (upload_id_.empty()) { // one part in all: one PUT
      const s3::Reply r = store_.client().put(object_, last_part);
      if (!r.ok()) return SysError{store_.location(), r.text()};
      return std::nullopt;
    }
    if (!send_part(last_part)) return error();
    const s3::Reply r = store_.client().complete_upload(object_, upload_id_, etags_);
    if (!r.ok()) return SysError{store_.location(), r.text()};
    upload_id_.clear(); // an object now: nothing to abort
    return std::nullopt;
  }

  void abandon() override { abort(); }

  bool failed(const s3::Reply& r) {
    fail(SysError{store_.location(), r.text()});
    return false;
  }

  void abort() {
    if (upload_id_.empty()) return;
    const s3::Reply r = store_.client().abort_upload(object_, upload_id_);
    diag::debug_lazy([&] {
      return message(Msg::cache_s3_upload_aborted,
                     {{"server", store_.location()}, {"object", object_}, {"error", r.ok() ? "done" : r.text()}});
    });
    upload_id_.clear();
    etags_.clear();
  }

  const S3Store& store_;
  std::string object_;
  std::string upload_id_; // a multipart upload under way
  std::vector<std::string> etags_; // of the parts sent
};

} // namespace

constexpr StoreMessages s3_messages{Msg::cache_redis_entry_corrupt, Msg::cache_redis_read_failed,
                                    Msg::cache_s3_store_failed,     Msg::cache_s3_list_failed,
                                    Msg::cache_s3_drop_failed,      Msg::cache_s3_list_failed};

// The ranged GETs of cache/remote_object.hpp: 404, and 403 but for a
// refused key or signature (an IAM policy without s3:ListBucket answers
// 403 for a missing key), are misses; an empty object (416) is none.
class S3Store::Reader final : public ObjectReader {
public:
  explicit Reader(const S3Store& store) : store_(store) {}
  RangeReply get(const std::string& name, std::string& out, std::size_t most, const std::string& range) const override {
    return reply(store_.client().get(name, out, most, range));
  }
  RangeReply get(const std::string& name, int fd, const std::string& range) const override {
    return reply(store_.client().get(name, fd, range));
  }

private:
  static RangeReply reply(const s3::Reply& r) {
    if (r.missing() || (r.error.empty() && r.status == 403 && !r.refused())) return {LookupState::missing, false, {}};
    if (r.error.empty() && r.status == 416) return {LookupState::corrupt, false, "not an entry"};
    if (!r.ok()) return {LookupState::unreadable, false, r.text()};
    return {LookupState::found, r.status == 206, {}};
  }
  const S3Store& store_;
};

S3Store::S3Store(s3::Settings settings, std::unique_ptr<ObjectUses> uses)
    : ObjectStore(s3_messages, std::move(uses)),
      display_("s3://" + settings.location.bucket + "/" + settings.location.prefix),
      client_(std::move(settings)), reader_(std::make_unique<Reader>(*this)) {}

std::string S3Store::object_name(std::string_view key, const Inputs& inputs) const {
  return client_.settings().location.prefix + entry_file_name(key, inputs);
}

std::string S3Store::where(std::string_view key, const Inputs& inputs) const {
  return "S3 store " + display_ + ", object " + object_name(key, inputs);
}

std::variant<std::vector<ObjectHead>, SysError> S3Store::heads(std::string_view start) const {
  const std::string& prefix = client_.settings().location.prefix;
  std::vector<s3::Object> objects;
  const s3::Reply r = client_.list(prefix + std::string(start), objects);
  if (!r.ok()) return SysError{display_, "ListObjectsV2: " + r.text()};
  std::vector<ObjectHead> out;
  for (s3::Object& o : objects) {
    const std::string_view name = std::string_view(o.key).substr(prefix.size());
    if (!is_entry_file_name(name)) continue;
    auto head = read_object_head(reader(), std::move(o.key),
                                 [&](const EntryHeader& h) { return object_name(h.key, h.address()); });
    if (auto* why = std::get_if<std::string>(&head)) return SysError{display_, *why};
    if (auto& h = std::get<std::optional<ObjectHead>>(head)) out.push_back(std::move(*h));
  }
  return out;
}

void S3Store::say_gone(const Doomed& d) const {
  const EntryHeader* h = d.head.header ? &*d.head.header : nullptr;
  say_removed(h, h ? where(h->key, h->address()) : "S3 store " + display_ + ", object " + d.head.name,
              h ? stored_size(*h) : 0, d.why);
}

std::optional<SysError> S3Store::remove_one(const Doomed& d) const {
  const s3::Reply r = client_.del(d.head.name);
  if (r.missing()) return std::nullopt;
  if (!r.ok()) return SysError{display_, "DELETE: " + r.text()};
  say_gone(d);
  return std::nullopt;
}

// One DeleteObjects request: those it deleted are said, the first it
// refused is the error.
std::optional<SysError> S3Store::remove_batch(const std::vector<Doomed>& doomed) const {
  std::vector<std::string> keys;
  keys.reserve(doomed.size());
  for (const Doomed& d : doomed) keys.push_back(d.head.name);
  std::vector<std::pair<std::string, std::string>> refused;
  const s3::Reply r = client_.del_many(keys, refused);
  if (!r.ok()) return SysError{display_, "DeleteObjects: " + r.text()};
  for (const Doomed& d : doomed)
    if (std::none_of(refused.begin(), refused.end(), [&](const auto& f) { return f.first == d.head.name; }))
      say_gone(d);
  if (refused.empty()) return std::nullopt;
  return SysError{display_, "DeleteObjects: object " + refused.front().first + ": " + refused.front().second};
}

std::optional<SysError> S3Store::remove(const std::vector<Doomed>& doomed) const {
  if (doomed.size() == 1) return remove_one(doomed.front());
  for (std::size_t at = 0; at < doomed.size(); at += s3::Client::most_deleted) {
    const auto from = doomed.begin() + static_cast<std::ptrdiff_t>(at);
    const std::vector<Doomed> batch(from, from + static_cast<std::ptrdiff_t>(
                                                     std::min(s3::Client::most_deleted, doomed.size() - at)));
    if (auto e = remove_batch(batch)) return e;
  }
  return std::nullopt;
}

std::optional<SysError> S3Store::drop(std::string_view key) const {
  auto found = heads(md5_hex(key) + '.');
  if (auto* e = std::get_if<SysError>(&found)) return *e;
  std::vector<ObjectHead>& all = std::get<std::vector<ObjectHead>>(found);
  // Also when the listing missed it (stored meanwhile).
  if (std::none_of(all.begin(), all.end(), [&](const ObjectHead& h) { return h.name == object_name(key); }))
    all.push_back({object_name(key), std::nullopt});
  std::vector<Doomed> doomed;
  doomed.reserve(all.size());
  for (ObjectHead& h : all) doomed.push_back({std::move(h), "dropped"});
  return remove(doomed);
}

// Objects named as entries that are none go too; those to go are gathered
// and go by DeleteObjects, a full batch as soon as there is one.
std::variant<GcCounts, SysError> S3Store::gc(const GcPolicy& policy) const {
  std::vector<Doomed> doomed;
  auto counts = gc_objects(
      heads(""), policy,
      [&](const ObjectHead& h, std::string_view why) -> std::optional<SysError> {
        doomed.push_back({h, std::string(why)});
        if (doomed.size() < s3::Client::most_deleted) return std::nullopt;
        auto e = remove(doomed);
        doomed.clear();
        return e;
      },
      [&](const EntryHeader& h) { return stored_size(h); }, display_, uses_.get());
  if (std::holds_alternative<SysError>(counts)) return counts;
  if (auto e = remove(doomed)) return *e;
  return counts;
}

BuildOrError S3Store::begin_build(std::string_view key, const Inputs& inputs, std::int64_t created_ns,
                                  const BuildContents& what) const {
  return start_build<S3Build>(*this, key, inputs, created_ns, what);
}

} // namespace bufferlock
