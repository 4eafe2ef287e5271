#include "s3/sigv4.hpp"

#include "util/crypto.hpp"
#include "util/hex.hpp"

#include <algorithm>
#include <cctype>

namespace bufferlock::s3 {

namespace {

constexpr std::string_view algorithm = "AWS4-HMAC-SHA256";

bool unreserved(unsigned char c) { return std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~'; }

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

// A header value as signed: trimmed, each run of spaces one space.
std::string canonical_value(std::string_view v) {
  std::string out;
  for (char c : v) {
    const bool space = c == ' ' || c == '\t';
    if (space && (out.empty() || out.back() == ' ')) continue;
    out += space ? ' ' : c;
  }
  if (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

// The signed headers by lowercase name, sorted; a repeated name's values
// joined by ',' in the order given.
std::vector<Field> canonical_headers(const std::vector<Field>& headers) {
  std::vector<Field> out;
  out.reserve(headers.size());
  for (const auto& [name, value] : headers) out.emplace_back(lower(name), canonical_value(value));
  std::stable_sort(out.begin(), out.end(), [](const Field& a, const Field& b) { return a.first < b.first; });
  std::vector<Field> merged;
  for (auto& h : out) {
    if (!merged.empty() && merged.back().first == h.first) merged.back().second += "," + h.second;
    else merged.push_back(std::move(h));
  }
  return merged;
}

std::string signed_header_names(const std::vector<Field>& canonical) {
  std::string names;
  for (const auto& h : canonical) names += (names.empty() ? "" : ";") + h.first;
  return names;
}

std::string day(const Scope& scope) { return scope.amz_date.substr(0, 8); }

std::string credential_scope(const Scope& scope) {
  return day(scope) + "/" + scope.region + "/" + scope.service + "/aws4_request";
}

// The key of the day: HMAC chained over date, region, service, "aws4_request".
std::string signing_key(const Scope& scope, const Credentials& c) {
  std::string k = hmac_sha256("AWS4" + c.secret_key, day(scope));
  k = hmac_sha256(k, scope.region);
  k = hmac_sha256(k, scope.service);
  return hmac_sha256(k, "aws4_request");
}

} // namespace

std::string amz_date(std::time_t t) {
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[20];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

std::string uri_encode(std::string_view s, bool keep_slash) {
  static constexpr char digits[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    if (unreserved(c) || (keep_slash && c == '/')) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += digits[c >> 4];
      out += digits[c & 15];
    }
  }
  return out;
}

std::string encode_path(std::string_view path) { return uri_encode(path.empty() ? "/" : path, true); }

std::string canonical_query(const std::vector<Field>& query) {
  std::vector<Field> encoded;
  encoded.reserve(query.size());
  for (const auto& [name, value] : query) encoded.emplace_back(uri_encode(name, false), uri_encode(value, false));
  std::sort(encoded.begin(), encoded.end());
  std::string out;
  for (const auto& [name, value] : encoded) {
    if (!out.empty()) out += '&';
    out.append(name).append(1, '=').append(value);
  }
  return out;
}

std::string canonical_request(const Request& r) {
  const auto headers = canonical_headers(r.headers);
  std::string out = r.method + "\n" + encode_path(r.path) + "\n" + canonical_query(r.query) + "\n";
  for (const auto& [name, value] : headers) out.append(name).append(1, ':').append(value).append(1, '\n');
  out += '\n';
  out += signed_header_names(headers);
  out += '\n';
  out += r.payload_hash;
  return out;
}

std::string string_to_sign(const Request& r, const Scope& scope) {
  return std::string(algorithm) + "\n" + scope.amz_date + "\n" + credential_scope(scope) + "\n" +
         to_hex(sha256(canonical_request(r)));
}

std::string authorization(const Request& r, const Scope& scope, const Credentials& c) {
  const std::string signature = hmac_sha256(signing_key(scope, c), string_to_sign(r, scope));
  if (signature.size() != sha256_size) return {};
  return std::string(algorithm) + " Credential=" + c.access_key + "/" + credential_scope(scope) +
         ", SignedHeaders=" + signed_header_names(canonical_headers(r.headers)) + ", Signature=" + to_hex(signature);
}

std::vector<Field> sign_s3(Request r, const Scope& scope, const Credentials& c) {
  std::vector<Field> added{{"x-amz-date", scope.amz_date}, {"x-amz-content-sha256", r.payload_hash}};
  if (!c.session_token.empty()) added.emplace_back("x-amz-security-token", c.session_token);
  r.headers.insert(r.headers.end(), added.begin(), added.end());
  added.emplace_back("Authorization", authorization(r, scope, c));
  return added;
}

} // namespace bufferlock::s3
