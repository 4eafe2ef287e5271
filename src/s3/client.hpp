// S3 requests for the S3 store (SPEC §19): each one signed with Signature
// V4 (s3/sigv4.hpp) and sent over the http store's libcurl client, which
// streams bodies and bounds every request by --store-timeout. A 5xx or a
// SlowDown answer is retried with back-off while the --store-timeout since
// the request's first try lasts.
#pragma once

#include "http/client.hpp"
#include "s3/config.hpp"
#include "s3/sigv4.hpp"
#include "s3/url.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace bufferlock::s3 {

struct Settings {
  Credentials credentials; // secrets: never printed
  std::string region;
  Endpoint endpoint;
  Location location;
  HttpSettings http; // timeout, CA file, while_waiting (no user, password or token)
};

// What a request came to: a status with S3's error code, or no answer.
struct Reply {
  long status = 0;
  std::string error; // a transport failure; empty with a status
  std::string code;  // S3's <Code> of an error answer
  bool ok() const { return error.empty() && status / 100 == 2 && code.empty(); }
  bool missing() const { return error.empty() && status == 404; }
  // The key or the signature refused, or the clock too far off: the
  // credentials (or the clock) are wrong, not the object.
  bool refused() const;
  // "HTTP status 403 (SignatureDoesNotMatch: ...)", or the transport error.
  std::string text() const;
};

// An object of a listing.
struct Object {
  std::string key; // the whole key, prefix included
  std::uint64_t size = 0;
};

class Client {
public:
  explicit Client(Settings s);

  // GET of `key` (a range "FIRST-LAST" or "-N", or all) into `body`, at
  // most `most` bytes; or, a 2xx body, appended to `fd`.
  Reply get(const std::string& key, std::string& body, std::size_t most, std::string_view range);
  Reply get(const std::string& key, int fd, std::string_view range);
  // One PUT of `data`.
  Reply put(const std::string& key, std::string_view data);
  Reply del(const std::string& key);
  // DeleteObjects (POST ?delete) of up to most_deleted keys at once, with
  // its Content-MD5 as S3 requires; `refused` gets the keys the server
  // would not delete, each with its <Code>. A key already gone is deleted.
  static constexpr std::size_t most_deleted = 1000;
  Reply del_many(const std::vector<std::string>& keys, std::vector<std::pair<std::string, std::string>>& refused);
  // The multipart upload: begun (its id), a part sent (its ETag), completed
  // with every part's ETag in order, or aborted.
  Reply begin_upload(const std::string& key, std::string& upload_id);
  Reply send_part(const std::string& key, const std::string& upload_id, int number, std::string_view data,
                  std::string& etag);
  Reply complete_upload(const std::string& key, const std::string& upload_id, const std::vector<std::string>& etags);
  Reply abort_upload(const std::string& key, const std::string& upload_id);
  // ListObjectsV2 of the keys under `prefix` and not deeper (delimiter '/'), every page.
  Reply list(const std::string& prefix, std::vector<Object>& out);

  const Settings& settings() const { return settings_; }
  // In a forked child: a connection of its own.
  void reset() { http_.reset(); }

private:
  struct Call {
    std::string method = "GET";
    std::string key;
    std::vector<Field> query;
    std::vector<Field> headers; // signed and sent beside the signature's own
    std::string_view data;  // the body sent
    bool sign_body = false; // its SHA-256 signed, else UNSIGNED-PAYLOAD
    std::string_view range;
    int fd = -1;
    std::string* body = nullptr;
    std::size_t most = 0;
    std::string* etag = nullptr;
    bool keyed_errors = false; // a 2xx body lists <Error>s of its own keys (DeleteObjects)
  };
  // Signs and sends `c`, retrying 5xx and SlowDown.
  Reply call(const Call& c);
  Reply once(const Call& c);
  HttpClient& http();

  Settings settings_;
  std::unique_ptr<HttpClient> http_;
};

// The text of every <TAG>...</TAG> in `xml`, entities decoded (for tests).
std::vector<std::string> xml_values(std::string_view xml, std::string_view tag);
// RFC 4648 base64 (Content-MD5's encoding).
std::string base64(std::string_view bytes);
// The body of a DeleteObjects request of `keys` (quiet: only errors answered).
std::string delete_request(const std::vector<std::string>& keys);

} // namespace bufferlock::s3
