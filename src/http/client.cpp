#include "http/client.hpp"

#include "util/clock.hpp"
#include "util/dynlib.hpp"
#include "util/files.hpp"
#include "util/io.hpp"

// Plain declarations: the type-checking macros would stand in for the
// bound function pointers of the same names.
#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include <strings.h>

namespace bufferlock {

namespace {

// Debian's libcurl4 (OpenSSL flavour); declared by its headers, never linked.
constexpr const char* libcurl_name = "libcurl.so.4";
constexpr long io_buffer = 256 * 1024; // bytes per socket read or upload callback
// libcurl hands a body over 16 KiB at a time: written to a file in runs of
// this size, a 500 MiB download makes 500 writes, not 32,000.
constexpr std::size_t file_run = 1024 * 1024;
// The longest wait for the sockets between two rounds of libcurl: how soon
// a stall (--store-timeout) is seen.
constexpr int poll_ms = 100;

// The libcurl functions we call, resolved once by dlsym().
#define LIBCURL_FUNCTIONS(X)                                                                                 \
  X(curl_global_init)                                                                                        \
  X(curl_easy_init)                                                                                          \
  X(curl_easy_setopt)                                                                                        \
  X(curl_easy_pause)                                                                                         \
  X(curl_multi_init)                                                                                         \
  X(curl_multi_add_handle)                                                                                   \
  X(curl_multi_remove_handle)                                                                                \
  X(curl_multi_perform)                                                                                      \
  X(curl_multi_poll)                                                                                         \
  X(curl_multi_info_read)                                                                                    \
  X(curl_multi_strerror)                                                                                     \
  X(curl_multi_cleanup)                                                                                      \
  X(curl_easy_getinfo)                                                                                       \
  X(curl_easy_reset)                                                                                         \
  X(curl_easy_cleanup)                                                                                       \
  X(curl_easy_strerror)                                                                                      \
  X(curl_slist_append)                                                                                       \
  X(curl_slist_free_all)                                                                                     \
  X(curl_version)

struct Api {
  LIBCURL_FUNCTIONS(BUFFERLOCK_DYNLIB_FIELD)
};

const DynLib<Api>& library() {
  static const DynLib<Api> lib = [] {
    auto l = load_library<Api>({libcurl_name}, LIBCURL_FUNCTIONS(BUFFERLOCK_DYNLIB_NAME),
                               {LIBCURL_FUNCTIONS(BUFFERLOCK_DYNLIB_OFFSET)});
    if (l.loaded() && l.api.curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
      l.error = "libcurl could not be initialised";
      l.api = Api{};
    }
    return l;
  }();
  return lib;
}

const Api& api() { return library().api; }

// "10.000 s", as durations are shown elsewhere.
std::string seconds_text(Nanos d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f s", static_cast<double>(d.count()) / 1e9);
  return buf;
}

} // namespace

std::string http_library_version() {
  if (!library().error.empty()) return library().error;
  // "libcurl/7.88.1 OpenSSL/3.0.x zlib/... ...": the first two say enough.
  const std::string all = api().curl_version();
  const std::size_t first = all.find(' ');
  return all.substr(0, first == std::string::npos ? first : all.find(' ', first + 1));
}

std::string HttpReply::text() const {
  if (!error.empty()) return error;
  return "HTTP status " + std::to_string(status);
}

// One easy handle, the multi handle that runs it (and keeps its
// connection), and what the callbacks of the request under way need.
struct HttpClient::Handle {
  CURL* easy = nullptr;
  CURLM* multi = nullptr;
  bool added = false; // a request is under way in `multi`
  bool done = false;  // ... and has ended, with `result`
  CURLcode result = CURLE_OK;
  std::string multi_error; // the multi handle failed
  curl_slist* headers = nullptr;
  curl_slist* request_headers = nullptr; // `headers` and this request's own
  char errbuf[CURL_ERROR_SIZE] = {};
  Nanos timeout{0};
  // The body's destination: a file, a string (at most `most` bytes), or nowhere.
  int fd = -1;
  std::string run; // bytes for fd not written yet
  std::string* body = nullptr;
  std::size_t most = 0;
  bool error_body = false;     // `body` takes an error page too
  std::string* etag = nullptr; // an answer's ETag header
  const Source* source = nullptr;
  // An Upload's body: the bytes handed over and not yet taken by libcurl.
  const char* feed = nullptr;
  std::size_t feed_len = 0;
  bool feed_end = false; // finish(): no more bytes
  bool paused = false;   // the read callback ran dry: waiting for the build
  bool pulling = false;  // a Download: the body held in `run` until taken
  int local_errno = 0;  // a local write or read failed
  bool source_failed = false;
  bool stalled = false;
  Nanos last_move{0};
  curl_off_t moved = 0;

  ~Handle() {
    if (added) api().curl_multi_remove_handle(multi, easy);
    if (request_headers) api().curl_slist_free_all(request_headers);
    if (headers) api().curl_slist_free_all(headers);
    if (easy) api().curl_easy_cleanup(easy);
    if (multi) api().curl_multi_cleanup(multi);
  }

  // Whether a request can be set up: a handle, and none under way.
  bool usable() const { return easy && multi && !added; }

  // The handle's headers and `extra` for this request.
  void add_header(const char* extra) {
    const Api& a = api();
    if (request_headers) a.curl_slist_free_all(request_headers);
    request_headers = nullptr;
    for (const curl_slist* s = headers; s; s = s->next) request_headers = a.curl_slist_append(request_headers, s->data);
    request_headers = a.curl_slist_append(request_headers, extra);
    a.curl_easy_setopt(easy, CURLOPT_HTTPHEADER, request_headers);
  }

  // The bytes held for fd; false (with local_errno) when they cannot be written.
  bool flush() {
    if (run.empty()) return true;
    const bool ok = write_all(fd, run.data(), run.size());
    if (!ok) local_errno = errno;
    run.clear();
    return ok;
  }

  bool status_ok() const {
    long status = 0;
    api().curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
    return status / 100 == 2;
  }

  static std::size_t on_write(char* data, std::size_t size, std::size_t n, void* self) {
    auto& h = *static_cast<Handle*>(self);
    const std::size_t len = size * n;
    if (!h.status_ok() && !(h.body && h.error_body)) return len; // an error page: not ours to keep
    if (h.fd >= 0) {
      h.run.append(data, len);
      if (h.run.size() < file_run || h.flush()) return len;
      return 0; // ends the transfer
    }
    if (h.pulling) {
      // A run not taken yet: libcurl keeps these bytes until next() asks.
      if (h.run.size() >= file_run) {
        h.paused = true;
        return CURL_WRITEFUNC_PAUSE;
      }
      h.run.append(data, len);
      return len;
    }
    if (h.body) {
      const std::size_t room = h.most - std::min(h.most, h.body->size());
      h.body->append(data, std::min(room, len));
      return len <= room ? len : 0; // enough: the rest is not wanted
    }
    return len;
  }

  static std::size_t on_header(char* data, std::size_t size, std::size_t n, void* self) {
    auto& h = *static_cast<Handle*>(self);
    std::string_view line(data, size * n);
    if (line.size() > 5 && ::strncasecmp(line.data(), "etag:", 5) == 0) {
      line.remove_prefix(5);
      while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
      while (!line.empty() && (line.back() == '\r' || line.back() == '\n' || line.back() == ' ')) line.remove_suffix(1);
      h.etag->assign(line);
    }
    return size * n;
  }

  static std::size_t on_read(char* buf, std::size_t size, std::size_t n, void* self) {
    auto& h = *static_cast<Handle*>(self);
    std::size_t got = 0;
    if (!(*h.source)(buf, size * n, got)) {
      h.local_errno = errno;
      h.source_failed = true;
      return CURL_READFUNC_ABORT;
    }
    return got;
  }

  // An Upload's body: what was handed over, else a pause until more is.
  static std::size_t on_feed(char* buf, std::size_t size, std::size_t n, void* self) {
    auto& h = *static_cast<Handle*>(self);
    if (h.feed_len == 0) {
      if (h.feed_end) return 0;
      h.paused = true;
      return CURL_READFUNC_PAUSE;
    }
    const std::size_t k = std::min(size * n, h.feed_len);
    std::copy_n(h.feed, k, buf);
    h.feed += k;
    h.feed_len -= k;
    return k;
  }

  // No byte moved either way for the timeout: a stalled server. An upload
  // waiting for the build is not stalled.
  static int on_progress(void* self, curl_off_t, curl_off_t down, curl_off_t, curl_off_t up) {
    auto& h = *static_cast<Handle*>(self);
    const Nanos now = monotonic_now();
    if (h.paused || down + up != h.moved) {
      h.moved = down + up;
      h.last_move = now;
      return 0;
    }
    if (now - h.last_move < h.timeout) return 0;
    h.stalled = true;
    return 1;
  }
};

HttpClient::HttpClient(HttpSettings s) : settings_(std::move(s)) {}
HttpClient::~HttpClient() = default;

HttpClient::Handle& HttpClient::fresh() {
  const Api& a = api();
  if (!handle_) {
    handle_ = std::make_unique<Handle>();
    if (!library().error.empty()) return *handle_;
    handle_->easy = a.curl_easy_init();
    handle_->multi = a.curl_multi_init();
    if (!handle_->easy || !handle_->multi) return *handle_;
    if (!settings_.token.empty()) {
      const std::string bearer = "Authorization: Bearer " + settings_.token;
      handle_->headers = a.curl_slist_append(nullptr, bearer.c_str());
    }
  }
  Handle& h = *handle_;
  if (!h.easy || !h.multi || h.added) return h;
  // A reset keeps the live connection (in the multi handle's pool): the
  // next request reuses it.
  a.curl_easy_reset(h.easy);
  if (h.request_headers) a.curl_slist_free_all(h.request_headers);
  h.request_headers = nullptr;
  h.done = false;
  h.result = CURLE_OK;
  h.multi_error.clear();
  h.feed = nullptr;
  h.feed_len = 0;
  h.feed_end = false;
  h.paused = false;
  h.pulling = false;
  h.fd = -1;
  h.run.clear();
  if (h.run.capacity() < file_run) h.run.reserve(file_run);
  h.body = nullptr;
  h.most = 0;
  h.error_body = false;
  h.etag = nullptr;
  h.source = nullptr;
  h.local_errno = 0;
  h.source_failed = false;
  h.stalled = false;
  h.moved = 0;
  h.errbuf[0] = '\0';
  h.timeout = settings_.timeout;
  CURL* e = h.easy;
  a.curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  a.curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
  a.curl_easy_setopt(e, CURLOPT_ERRORBUFFER, h.errbuf);
  a.curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
                     static_cast<long>(std::max<std::int64_t>(1, settings_.timeout.count() / 1'000'000)));
  a.curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
  a.curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, &Handle::on_progress);
  a.curl_easy_setopt(e, CURLOPT_XFERINFODATA, &h);
  a.curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &Handle::on_write);
  a.curl_easy_setopt(e, CURLOPT_WRITEDATA, &h);
  a.curl_easy_setopt(e, CURLOPT_BUFFERSIZE, io_buffer);
  a.curl_easy_setopt(e, CURLOPT_UPLOAD_BUFFERSIZE, io_buffer);
  if (!settings_.user.empty() || !settings_.password.empty()) {
    a.curl_easy_setopt(e, CURLOPT_HTTPAUTH, static_cast<long>(CURLAUTH_BASIC));
    a.curl_easy_setopt(e, CURLOPT_USERNAME, settings_.user.c_str());
    a.curl_easy_setopt(e, CURLOPT_PASSWORD, settings_.password.c_str());
  }
  if (!settings_.ca_file.empty()) a.curl_easy_setopt(e, CURLOPT_CAINFO, settings_.ca_file.c_str());
  if (h.headers) a.curl_easy_setopt(e, CURLOPT_HTTPHEADER, h.headers);
  return h;
}

bool HttpClient::start(Handle& h, HttpReply& r) {
  if (!library().error.empty()) {
    r.error = library().error;
    return false;
  }
  if (!h.easy || !h.multi) {
    r.error = "libcurl could not make a handle";
    return false;
  }
  if (h.added) {
    r.error = "another request is under way";
    return false;
  }
  const CURLMcode mc = api().curl_multi_add_handle(h.multi, h.easy);
  if (mc != CURLM_OK) {
    r.error = api().curl_multi_strerror(mc);
    return false;
  }
  h.added = true;
  h.last_move = monotonic_now();
  return true;
}

bool HttpClient::step(Handle& h) {
  const Api& a = api();
  int running = 0;
  const CURLMcode mc = a.curl_multi_perform(h.multi, &running);
  int left = 0;
  while (const CURLMsg* m = a.curl_multi_info_read(h.multi, &left)) {
    if (m->msg == CURLMSG_DONE && m->easy_handle == h.easy) {
      h.done = true;
      h.result = m->data.result;
    }
  }
  if (mc != CURLM_OK && !h.done) {
    h.done = true;
    h.result = CURLE_FAILED_INIT;
    h.multi_error = a.curl_multi_strerror(mc);
  }
  return h.done;
}

void HttpClient::conclude(Handle& h, HttpReply& r) {
  const Api& a = api();
  // Removed before its end, a request's connection is closed: a server
  // keeps nothing of an upload cut short.
  a.curl_multi_remove_handle(h.multi, h.easy);
  h.added = false;
  CURLcode rc = h.done ? h.result : CURLE_ABORTED_BY_CALLBACK;
  if (h.fd >= 0 && !h.flush() && rc == CURLE_OK) rc = CURLE_WRITE_ERROR;
  a.curl_easy_getinfo(h.easy, CURLINFO_RESPONSE_CODE, &r.status);
  if (rc == CURLE_OK) return;
  // A string body that reached its bound was cut on purpose.
  if (rc == CURLE_WRITE_ERROR && h.body && h.local_errno == 0) return;
  if (!h.multi_error.empty())
    r.error = h.multi_error;
  else if (h.stalled)
    r.error = "no data for " + seconds_text(h.timeout) + " (--store-timeout)";
  else if (rc == CURLE_WRITE_ERROR && h.local_errno != 0)
    r.error = "cannot write a temporary file: " + errno_text(h.local_errno);
  else if (h.source_failed)
    r.error = "cannot read the entry to send: " + errno_text(h.local_errno);
  else if (h.errbuf[0] != '\0')
    r.error = h.errbuf;
  else
    r.error = a.curl_easy_strerror(rc);
}

HttpReply HttpClient::perform(Handle& h, bool sending) {
  HttpReply r;
  if (!start(h, r)) return r;
  while (!step(h)) {
    api().curl_multi_poll(h.multi, nullptr, 0, poll_ms, nullptr);
    if (sending && settings_.while_waiting && !settings_.while_waiting()) {
      conclude(h, r); // removed before its end: the connection is closed
      r.error = "no longer wanted";
      return r;
    }
  }
  conclude(h, r);
  return r;
}

HttpClient::Handle& HttpClient::fresh_get(const std::string& url, std::string_view range) {
  Handle& h = fresh();
  if (h.usable()) {
    api().curl_easy_setopt(h.easy, CURLOPT_URL, url.c_str());
    const std::string r(range); // libcurl keeps a copy
    if (!r.empty()) api().curl_easy_setopt(h.easy, CURLOPT_RANGE, r.c_str());
  }
  return h;
}

HttpReply HttpClient::get(const std::string& url, int fd, std::string_view range) {
  Handle& h = fresh_get(url, range);
  if (h.usable()) h.fd = fd;
  return perform(h);
}

HttpReply HttpClient::get(const std::string& url, std::string& body, std::size_t most, std::string_view range) {
  Handle& h = fresh_get(url, range);
  if (h.usable()) {
    h.body = &body;
    h.most = most;
  }
  return perform(h);
}

HttpReply HttpClient::put(const std::string& url, std::uint64_t len, const Source& read) {
  Handle& h = fresh();
  if (h.usable()) {
    const Api& a = api();
    a.curl_easy_setopt(h.easy, CURLOPT_URL, url.c_str());
    a.curl_easy_setopt(h.easy, CURLOPT_UPLOAD, 1L);
    a.curl_easy_setopt(h.easy, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(len));
    a.curl_easy_setopt(h.easy, CURLOPT_READFUNCTION, &Handle::on_read);
    a.curl_easy_setopt(h.easy, CURLOPT_READDATA, &h);
    h.source = &read;
  }
  return perform(h, true);
}

HttpReply HttpClient::del(const std::string& url) {
  Handle& h = fresh();
  if (h.usable()) {
    api().curl_easy_setopt(h.easy, CURLOPT_URL, url.c_str());
    api().curl_easy_setopt(h.easy, CURLOPT_CUSTOMREQUEST, "DELETE");
  }
  return perform(h);
}

HttpReply HttpClient::propfind(const std::string& url, std::string& body, std::size_t most) {
  Handle& h = fresh();
  if (h.usable()) {
    const Api& a = api();
    a.curl_easy_setopt(h.easy, CURLOPT_URL, url.c_str());
    a.curl_easy_setopt(h.easy, CURLOPT_CUSTOMREQUEST, "PROPFIND");
    h.add_header("Depth: 1");
    h.body = &body;
    h.most = most;
  }
  HttpReply r = perform(h);
  if (r.error.empty() && body.size() >= most) r.error = "the listing is larger than " + std::to_string(most) + " bytes";
  return r;
}

HttpReply HttpClient::exchange(const Exchange& x) {
  Handle& h = fresh();
  const bool sending = x.source != nullptr || !x.data.empty() || x.method == "PUT" || x.method == "POST";
  // A body from a string, handed over as a source.
  std::size_t at = 0;
  const Source from_data = [&](char* buf, std::size_t want, std::size_t& got) {
    got = x.data.copy(buf, want, at);
    at += got;
    return true;
  };
  if (h.usable()) {
    const Api& a = api();
    CURL* e = h.easy;
    a.curl_easy_setopt(e, CURLOPT_URL, x.url.c_str());
    if (x.method == "HEAD") {
      a.curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
    } else if (sending) {
      a.curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
      a.curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(x.source ? x.len : x.data.size()));
      a.curl_easy_setopt(e, CURLOPT_READFUNCTION, &Handle::on_read);
      a.curl_easy_setopt(e, CURLOPT_READDATA, &h);
      h.source = x.source ? x.source : &from_data;
      if (x.method != "PUT") a.curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, x.method.c_str());
    } else if (x.method != "GET") {
      a.curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, x.method.c_str());
    }
    // The headers are signed: sent as they are, and no Expect: 100-continue wait.
    for (const curl_slist* s = h.headers; s; s = s->next) h.request_headers = a.curl_slist_append(h.request_headers, s->data);
    for (const std::string& line : x.headers) h.request_headers = a.curl_slist_append(h.request_headers, line.c_str());
    h.request_headers = a.curl_slist_append(h.request_headers, "Expect:");
    a.curl_easy_setopt(e, CURLOPT_HTTPHEADER, h.request_headers);
    h.fd = x.fd;
    h.body = x.body;
    h.most = x.most;
    h.error_body = x.body != nullptr;
    if (x.etag) {
      h.etag = x.etag;
      a.curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, &Handle::on_header);
      a.curl_easy_setopt(e, CURLOPT_HEADERDATA, &h);
    }
  }
  return perform(h, sending);
}

} // namespace bufferlock

namespace bufferlock {

std::unique_ptr<HttpClient::Upload> HttpClient::upload(const std::string& url) {
  std::unique_ptr<Upload> u(new Upload(*this));
  Handle& h = fresh();
  if (h.usable()) {
    const Api& a = api();
    a.curl_easy_setopt(h.easy, CURLOPT_URL, url.c_str());
    a.curl_easy_setopt(h.easy, CURLOPT_UPLOAD, 1L);
    a.curl_easy_setopt(h.easy, CURLOPT_READFUNCTION, &Handle::on_feed);
    a.curl_easy_setopt(h.easy, CURLOPT_READDATA, &h);
    h.add_header("Transfer-Encoding: chunked");
  }
  if (!start(h, u->reply_)) u->over_ = true;
  return u;
}

std::unique_ptr<HttpClient::Download> HttpClient::download(const std::string& url, std::string_view range) {
  std::unique_ptr<Download> d(new Download(*this));
  Handle& h = fresh_get(url, range);
  if (h.usable()) h.pulling = true;
  if (!start(h, d->reply_)) d->over_ = true;
  return d;
}

HttpClient::Download::~Download() {
  if (over_) return;
  HttpReply ignored;
  client_.conclude(*client_.handle_, ignored); // abandoned: the connection is closed
}

bool HttpClient::Download::next(std::string& out) {
  out.clear();
  if (over_) return false;
  Handle& h = *client_.handle_;
  // The time since the last run was the caller's, not a stall.
  h.last_move = monotonic_now();
  if (h.paused) {
    h.paused = false;
    api().curl_easy_pause(h.easy, CURLPAUSE_CONT);
  }
  while (h.run.empty() && !h.done) {
    if (client_.step(h) || !h.run.empty()) break;
    api().curl_multi_poll(h.multi, nullptr, 0, poll_ms, nullptr);
  }
  if (h.run.empty()) {
    client_.conclude(h, reply_);
    over_ = true;
    return false;
  }
  out.swap(h.run);
  return true;
}

HttpClient::Upload::~Upload() {
  if (over_) return;
  HttpReply ignored;
  client_.conclude(*client_.handle_, ignored); // abandoned: the connection is closed
}

bool HttpClient::Upload::drive(bool (*enough)(const Handle&)) {
  Handle& h = *client_.handle_;
  while (!client_.step(h)) {
    if (enough(h)) return true;
    api().curl_multi_poll(h.multi, nullptr, 0, poll_ms, nullptr);
    if (client_.settings_.while_waiting && !client_.settings_.while_waiting()) {
      client_.conclude(h, reply_); // removed before its end: the connection is closed
      reply_.error = "no longer wanted";
      over_ = true;
      return false;
    }
  }
  client_.conclude(h, reply_);
  over_ = true;
  return false;
}

bool HttpClient::Upload::send(const char* data, std::size_t len) {
  if (over_) return false;
  if (len == 0) return true;
  Handle& h = *client_.handle_;
  h.feed = data;
  h.feed_len = len;
  h.last_move = monotonic_now(); // the time since the last send was the build's
  if (h.paused) {
    h.paused = false;
    api().curl_easy_pause(h.easy, CURLPAUSE_CONT);
  }
  if (drive([](const Handle& x) { return x.feed_len == 0; })) return true;
  // Answered before the end of its body: refused, or a server that
  // misbehaves; either way, not stored.
  if (reply_.ok()) reply_.error = "the server answered (" + reply_.text() + ") before the end of the upload";
  return false;
}

HttpReply HttpClient::Upload::finish() {
  if (over_) return reply_;
  Handle& h = *client_.handle_;
  h.feed_len = 0;
  h.feed_end = true;
  h.last_move = monotonic_now();
  if (h.paused) {
    h.paused = false;
    api().curl_easy_pause(h.easy, CURLPAUSE_CONT);
  }
  drive([](const Handle&) { return false; });
  return reply_;
}

} // namespace bufferlock
