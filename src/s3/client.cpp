#include "s3/client.hpp"

#include "util/clock.hpp"
#include "util/crypto.hpp"
#include "util/hex.hpp"
#include "util/md5.hpp"

#include <unistd.h>

#include <algorithm>
#include <ctime>

namespace bufferlock::s3 {

namespace {

constexpr std::size_t most_answer = 1024 * 1024;       // an error, an upload id, a completion
constexpr std::size_t most_page = 16 * 1024 * 1024;    // one page of a listing (1,000 keys)
constexpr Nanos first_pause = std::chrono::milliseconds(100);
constexpr Nanos most_pause = std::chrono::seconds(2);

std::string decode_entities(std::string_view s) {
  static constexpr std::pair<std::string_view, char> entities[] = {
      {"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}};
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    bool decoded = false;
    if (s[i] == '&')
      for (const auto& [name, c] : entities)
        if (s.substr(i, name.size()) == name) {
          out += c;
          i += name.size() - 1;
          decoded = true;
          break;
        }
    if (!decoded) out += s[i];
  }
  return out;
}

std::string xml_value(std::string_view xml, std::string_view tag) {
  auto v = xml_values(xml, tag);
  return v.empty() ? std::string() : std::move(v.front());
}

// Calls `each` with the raw inside of every <TAG>...</TAG> of `xml`.
template <class Each> void for_each_element(std::string_view xml, std::string_view tag, Each each) {
  std::string open(1, '<'), close("</");
  open.append(tag) += '>';
  close.append(tag) += '>';
  for (std::size_t at = xml.find(open); at != std::string_view::npos; at = xml.find(open, at)) {
    at += open.size();
    const std::size_t end = xml.find(close, at);
    if (end == std::string_view::npos) break;
    each(xml.substr(at, end - at));
    at = end + close.size();
  }
}

std::string escape_xml(std::string_view s) {
  std::string out;
  for (const char c : s) {
    switch (c) {
    case '&': out += "&amp;"; break;
    case '<': out += "&lt;"; break;
    case '>': out += "&gt;"; break;
    case '"': out += "&quot;"; break;
    default: out += c;
    }
  }
  return out;
}

bool retryable(const Reply& r) { return r.error.empty() && (r.status >= 500 || r.code == "SlowDown"); }

void pause_for(Nanos d) {
  timespec ts{static_cast<time_t>(d.count() / 1'000'000'000), static_cast<long>(d.count() % 1'000'000'000)};
  ::nanosleep(&ts, nullptr);
}

} // namespace

std::vector<std::string> xml_values(std::string_view xml, std::string_view tag) {
  std::vector<std::string> out;
  for_each_element(xml, tag, [&](std::string_view inside) { out.push_back(decode_entities(inside)); });
  return out;
}

std::string base64(std::string_view bytes) {
  static constexpr char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    const std::size_t n = std::min<std::size_t>(3, bytes.size() - i);
    std::uint32_t v = 0;
    for (std::size_t j = 0; j < 3; ++j)
      v = (v << 8) | (j < n ? static_cast<unsigned char>(bytes[i + j]) : 0U);
    for (std::size_t j = 0; j < 4; ++j) out += j <= n ? digits[(v >> (18 - 6 * j)) & 63] : '=';
  }
  return out;
}

std::string delete_request(const std::vector<std::string>& keys) {
  std::string xml = "<Delete><Quiet>true</Quiet>";
  for (const std::string& k : keys) xml += "<Object><Key>" + escape_xml(k) + "</Key></Object>";
  return xml + "</Delete>";
}

bool Reply::refused() const {
  return error.empty() && (code == "SignatureDoesNotMatch" || code == "InvalidAccessKeyId" ||
                           code == "RequestTimeTooSkewed" || code == "InvalidToken" || code == "ExpiredToken");
}

std::string Reply::text() const {
  if (!error.empty()) return error;
  std::string t = "HTTP status " + std::to_string(status);
  if (code.empty()) return t;
  if (code == "SignatureDoesNotMatch") return t + " (SignatureDoesNotMatch: the secret key is not the key's)";
  if (code == "InvalidAccessKeyId") return t + " (InvalidAccessKeyId: the server knows no such access key)";
  if (code == "RequestTimeTooSkewed") return t + " (RequestTimeTooSkewed: this machine's clock is too far off)";
  return t + " (" + code + ")";
}

Client::Client(Settings s) : settings_(std::move(s)) {}

HttpClient& Client::http() {
  if (!http_) http_ = std::make_unique<HttpClient>(settings_.http);
  return *http_;
}

Reply Client::once(const Call& c) {
  const Target t = target(settings_.endpoint, settings_.location.bucket, c.key);
  Request req;
  req.method = c.method;
  req.path = t.path;
  req.query = c.query;
  req.headers = {{"host", t.host}};
  req.headers.insert(req.headers.end(), c.headers.begin(), c.headers.end());
  req.payload_hash = c.sign_body ? to_hex(sha256(c.data)) : std::string(unsigned_payload);
  Scope scope;
  scope.region = settings_.region;
  scope.amz_date = amz_date(std::time(nullptr));
  HttpClient::Exchange x;
  x.method = c.method;
  x.url = t.url;
  if (!c.query.empty()) x.url += "?" + canonical_query(c.query);
  const auto add_header = [&x](std::string header, std::string_view value) {
    header += ": ";
    header += value;
    x.headers.push_back(std::move(header));
  };
  for (const auto& [name, value] : c.headers) add_header(name, value);
  for (auto& [name, value] : sign_s3(req, scope, settings_.credentials)) add_header(std::move(name), value);
  if (!c.range.empty()) x.headers.push_back("Range: bytes=" + std::string(c.range));
  x.data = c.data;
  x.fd = c.fd;
  std::string answer; // an error's body, when the caller wants none
  x.body = c.fd >= 0 ? nullptr : (c.body ? c.body : &answer);
  x.most = c.body ? c.most : most_answer;
  x.etag = c.etag;
  const HttpReply h = http().exchange(x);
  Reply r{h.status, h.error, {}};
  // An error's code; CompleteMultipartUpload may fail with a 200 whose body is an error.
  const bool error_page = h.status / 100 != 2 || (c.method == "POST" && !c.keyed_errors && x.body &&
                                                  x.body->find("<Error>") != std::string::npos);
  if (r.error.empty() && x.body && error_page) r.code = xml_value(*x.body, "Code");
  if (r.error.empty() && h.status / 100 != 2 && r.code.empty() && h.status == 503) r.code = "SlowDown";
  return r;
}

Reply Client::call(const Call& c) {
  const Nanos deadline = monotonic_now() + settings_.http.timeout;
  const off_t fd_at = c.fd >= 0 ? ::lseek(c.fd, 0, SEEK_CUR) : 0;
  const std::size_t body_at = c.body ? c.body->size() : 0;
  Nanos pause = first_pause;
  for (;;) {
    Reply r = once(c);
    if (!retryable(r) || monotonic_now() + pause > deadline) return r;
    if (settings_.http.while_waiting && !settings_.http.while_waiting()) return r;
    pause_for(pause);
    pause = std::min(pause * 2, most_pause);
    // What the failed try wrote is taken back.
    if (c.body) c.body->resize(body_at);
    if (c.fd >= 0 && (::ftruncate(c.fd, fd_at) != 0 || ::lseek(c.fd, fd_at, SEEK_SET) < 0)) return r;
  }
}

Reply Client::get(const std::string& key, std::string& body, std::size_t most, std::string_view range) {
  Call c;
  c.key = key;
  c.range = range;
  c.body = &body;
  c.most = most;
  return call(c);
}

Reply Client::get(const std::string& key, int fd, std::string_view range) {
  Call c;
  c.key = key;
  c.range = range;
  c.fd = fd;
  return call(c);
}

Reply Client::put(const std::string& key, std::string_view data) {
  Call c;
  c.method = "PUT";
  c.key = key;
  c.data = data;
  return call(c);
}

Reply Client::del(const std::string& key) {
  Call c;
  c.method = "DELETE";
  c.key = key;
  return call(c);
}

Reply Client::del_many(const std::vector<std::string>& keys,
                       std::vector<std::pair<std::string, std::string>>& refused) {
  const std::string xml = delete_request(keys);
  Call c;
  c.method = "POST";
  c.query = {{"delete", ""}};
  c.headers = {{"content-md5", base64(md5_raw(xml))}};
  c.data = xml;
  c.sign_body = true;
  c.keyed_errors = true;
  std::string answer;
  c.body = &answer;
  c.most = most_page;
  Reply r = call(c);
  if (!r.ok()) return r;
  for_each_element(answer, "Error", [&](std::string_view one) {
    std::string code = xml_value(one, "Code");
    if (code != "NoSuchKey") refused.emplace_back(xml_value(one, "Key"), std::move(code));
  });
  return r;
}

Reply Client::begin_upload(const std::string& key, std::string& upload_id) {
  Call c;
  c.method = "POST";
  c.key = key;
  c.query = {{"uploads", ""}};
  c.sign_body = true;
  std::string answer;
  c.body = &answer;
  c.most = most_answer;
  Reply r = call(c);
  if (!r.ok()) return r;
  upload_id = xml_value(answer, "UploadId");
  if (upload_id.empty()) r.error = "the server answered CreateMultipartUpload with no UploadId";
  return r;
}

Reply Client::send_part(const std::string& key, const std::string& upload_id, int number, std::string_view data,
                        std::string& etag) {
  Call c;
  c.method = "PUT";
  c.key = key;
  c.query = {{"partNumber", std::to_string(number)}, {"uploadId", upload_id}};
  c.data = data;
  c.etag = &etag;
  Reply r = call(c);
  if (r.ok() && etag.empty()) r.error = "the server answered UploadPart with no ETag";
  return r;
}

Reply Client::complete_upload(const std::string& key, const std::string& upload_id,
                              const std::vector<std::string>& etags) {
  std::string xml = "<CompleteMultipartUpload>";
  for (std::size_t i = 0; i < etags.size(); ++i)
    xml += "<Part><PartNumber>" + std::to_string(i + 1) + "</PartNumber><ETag>" + escape_xml(etags[i]) +
           "</ETag></Part>";
  xml += "</CompleteMultipartUpload>";
  Call c;
  c.method = "POST";
  c.key = key;
  c.query = {{"uploadId", upload_id}};
  c.data = xml;
  c.sign_body = true;
  std::string answer;
  c.body = &answer;
  c.most = most_answer;
  return call(c); // a 200 whose body is an <Error> has its code: not ok()
}

Reply Client::abort_upload(const std::string& key, const std::string& upload_id) {
  Call c;
  c.method = "DELETE";
  c.key = key;
  c.query = {{"uploadId", upload_id}};
  return call(c);
}

Reply Client::list(const std::string& prefix, std::vector<Object>& out) {
  std::string token;
  for (;;) {
    Call c;
    c.query = {{"list-type", "2"}, {"prefix", prefix}, {"delimiter", "/"}};
    if (!token.empty()) c.query.push_back({"continuation-token", token});
    std::string page;
    c.body = &page;
    c.most = most_page;
    Reply r = call(c);
    if (!r.ok()) return r;
    if (page.size() >= most_page) {
      r.error = "a page of the listing is larger than " + std::to_string(most_page) + " bytes";
      return r;
    }
    for_each_element(page, "Contents", [&](std::string_view one) {
      Object o;
      o.key = xml_value(one, "Key");
      o.size = std::strtoull(xml_value(one, "Size").c_str(), nullptr, 10);
      out.push_back(std::move(o));
    });
    if (xml_value(page, "IsTruncated") != "true") return r;
    token = xml_value(page, "NextContinuationToken");
    if (token.empty()) {
      r.error = "the server cut the listing short without a continuation token";
      return r;
    }
  }
}

} // namespace bufferlock::s3
