// HTTP requests for the http(s) store (SPEC §18) through libcurl, which is
// dlopen()ed on the first request: a run that uses no such store loads none
// of it (ARCHITECTURE.md, Start-up). Bodies stream through callbacks, never
// whole in memory; one handle is kept, so a run's requests share a
// connection (keep-alive). Requests run on libcurl's multi interface on the
// caller's thread, so that an upload can take its body piece by piece
// while the build makes it (Upload).
#pragma once

#include "util/duration.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace bufferlock {

// libcurl's version and its TLS library ("libcurl/7.88.1 OpenSSL/3.0.x"), or why it
// cannot be loaded: for --version, the one other run that loads it.
std::string http_library_version();

struct HttpSettings {
  std::string user;     // from the URL, percent-decoded; empty: none
  std::string password; // likewise
  std::string token;    // --store-token-file: sent as "Authorization: Bearer ..."
  std::string ca_file;  // --tls-ca; empty: the system's CAs
  Nanos timeout = std::chrono::seconds(10); // --store-timeout: connecting, and any stall
  // Called about every poll_ms while an upload waits for its server, so
  // that the caller's own duties (a command's signals, its lock's renewal)
  // keep their times; it must return at once. false: the upload is no
  // longer wanted (abandoned at once).
  bool (*while_waiting)() = nullptr;
};

// What a request came to: a status, or no answer at all (error says why).
struct HttpReply {
  long status = 0;
  std::string error; // a transport failure (refused, timed out, cut short, TLS); empty with a status
  bool ok() const { return error.empty() && status / 100 == 2; }
  // "HTTP status 500", or the transport error.
  std::string text() const;
};

class HttpClient {
  struct Handle;

public:
  explicit HttpClient(HttpSettings s);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // GET: a 2xx body is appended to `fd`. `range`: "FIRST-LAST" bytes, or empty.
  HttpReply get(const std::string& url, int fd, std::string_view range = {});
  // GET of a small body (at most `most` bytes; more is an error) into `body`.
  HttpReply get(const std::string& url, std::string& body, std::size_t most, std::string_view range = {});
  // PUT of `len` bytes that `read` hands over in order (false: abort).
  using Source = std::function<bool(char* buf, std::size_t want, std::size_t& got)>;
  HttpReply put(const std::string& url, std::uint64_t len, const Source& read);
  HttpReply del(const std::string& url);

  // A PUT whose length is not known when it starts (Transfer-Encoding:
  // chunked), its body handed over as it is made. It uses the client's
  // connection: no other request may be made while it lasts.
  class Upload {
  public:
    ~Upload();
    Upload(const Upload&) = delete;
    Upload& operator=(const Upload&) = delete;
    // Hands over `len` bytes; returns once libcurl has taken them all,
    // waiting at most a --store-timeout without progress. False once the
    // upload failed (reply() says why); nothing more is sent then.
    bool send(const char* data, std::size_t len);
    // Ends the body and waits for the server's answer.
    HttpReply finish();
    const HttpReply& reply() const { return reply_; }

  private:
    friend class HttpClient;
    explicit Upload(HttpClient& c) : client_(c) {}
    // Runs the transfer until `enough` holds or it ends (then reply_ is set).
    bool drive(bool (*enough)(const Handle&));
    HttpClient& client_;
    HttpReply reply_;
    bool over_ = false; // answered, failed or abandoned
  };
  // Starts an Upload to `url`. An Upload destroyed before finish() is
  // abandoned: its connection is closed mid-body, so that the server keeps
  // nothing of it.
  std::unique_ptr<Upload> upload(const std::string& url);
  // A GET whose body the caller takes as it comes, in order, in runs of at
  // most about a MiB (libcurl is paused meanwhile). It uses the client's
  // connection: no other request may be made while it lasts.
  class Download {
  public:
    ~Download();
    Download(const Download&) = delete;
    Download& operator=(const Download&) = delete;
    // The next bytes of a 2xx body, in place of `out`'s; false at the end
    // of the body or once the request failed (reply() says which).
    bool next(std::string& out);
    const HttpReply& reply() const { return reply_; }

  private:
    friend class HttpClient;
    explicit Download(HttpClient& c) : client_(c) {}
    HttpClient& client_;
    HttpReply reply_;
    bool over_ = false; // answered in full, or failed
  };
  // Starts a Download of `url` (`range` as with get). One destroyed before
  // the end of its body is abandoned: its connection is closed.
  std::unique_ptr<Download> download(const std::string& url, std::string_view range = {});
  // WebDAV PROPFIND, Depth: 1: the multistatus document (at most `most` bytes).
  HttpReply propfind(const std::string& url, std::string& body, std::size_t most);

  // Any request with headers of its own (a signed one: the S3 store's).
  struct Exchange {
    std::string method = "GET";
    std::string url;
    std::vector<std::string> headers; // "Name: value"
    // The body sent: `len` bytes from `source`, else `data`; none for GET, HEAD, DELETE.
    std::string_view data;
    const Source* source = nullptr;
    std::uint64_t len = 0;
    // The answer's body: into `fd` (2xx only), else into `body` (at most
    // `most` bytes, an error's body too: its S3 error code).
    int fd = -1;
    std::string* body = nullptr;
    std::size_t most = 0;
    std::string* etag = nullptr; // the ETag header of the answer
  };
  HttpReply exchange(const Exchange& x);

private:
  // An upload (`sending`) is abandoned once while_waiting says it is no longer wanted.
  HttpReply perform(Handle& h, bool sending = false);
  Handle& fresh();
  // fresh(), set up for a GET of `url` (`range`: as with get), when usable.
  Handle& fresh_get(const std::string& url, std::string_view range);
  // The request set up on the handle: added to the multi handle; false,
  // with r.error, when there is no usable handle.
  bool start(Handle& h, HttpReply& r);
  // One round of the multi handle: true once the request is over.
  bool step(Handle& h);
  // Removes the request from the multi handle and fills `r` from how it ended.
  void conclude(Handle& h, HttpReply& r);

  HttpSettings settings_;
  std::unique_ptr<Handle> handle_;
};

} // namespace bufferlock
