// AWS Signature Version 4 for one request (the Authorization header scheme),
// as S3 checks it: the canonical request (method, URI, sorted query, signed
// headers, payload hash), the string to sign over the day's scope, and the
// key derived from the secret for that day, region and service.
//
// Paths and query parameters are given decoded; the signer encodes them with
// S3's rules (every byte but A-Z a-z 0-9 - _ . ~ as %XX; '/' kept in the
// path, no dot-segment removal) and the request must be sent with the same
// encoding (encode_path, canonical_query). HMAC-SHA256 and SHA-256 come from
// the dlopen()ed libcrypto (util/crypto.hpp): crypto_error() must be empty.
#pragma once

#include <ctime>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bufferlock::s3 {

struct Credentials {
  std::string access_key;
  std::string secret_key;    // a secret: never printed
  std::string session_token; // empty: none; a secret too

  bool operator==(const Credentials&) const = default;
};

using Field = std::pair<std::string, std::string>; // a header or a query parameter

// The payload hash of a body not hashed in advance (a streamed upload).
inline constexpr std::string_view unsigned_payload = "UNSIGNED-PAYLOAD";

struct Request {
  std::string method;         // GET, PUT, ...
  std::string path = "/";     // decoded, from the leading '/': /BUCKET/KEY path-style, /KEY virtual-hosted
  std::vector<Field> query;   // decoded; a valueless parameter (?uploads) has the value ""
  std::vector<Field> headers; // signed, host included (any case; values as sent)
  std::string payload_hash;   // lowercase hex SHA-256 of the body, or unsigned_payload
};

struct Scope {
  std::string region;            // us-east-1
  std::string service = "s3";    // the test suite's vectors use "service"
  std::string amz_date;          // 20150830T123600Z (amz_date())
};

// The time as x-amz-date writes it: YYYYMMDDTHHMMSSZ, UTC.
std::string amz_date(std::time_t t);

// RFC 3986 percent-encoding as SigV4 wants it; '/' kept when keep_slash.
std::string uri_encode(std::string_view s, bool keep_slash);
std::string encode_path(std::string_view path);
// name=value pairs, encoded, sorted by name then value, joined by '&'.
std::string canonical_query(const std::vector<Field>& query);

// The canonical request and the string to sign, exposed for the tests.
std::string canonical_request(const Request& r);
std::string string_to_sign(const Request& r, const Scope& scope);

// The Authorization header's value for `r` as it stands (its headers are all
// signed). Empty when libcrypto failed.
std::string authorization(const Request& r, const Scope& scope, const Credentials& c);

// What S3 wants added to a request: signs `r` after adding to its headers
// x-amz-date, x-amz-content-sha256 (r.payload_hash) and, with a session token,
// x-amz-security-token; returns those headers and Authorization, to send
// beside r's own.
std::vector<Field> sign_s3(Request r, const Scope& scope, const Credentials& c);

} // namespace bufferlock::s3
