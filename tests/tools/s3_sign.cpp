// s3_sign [-f FILE] [-q NAME[=VALUE]]... [-u] [-t AMZDATE] METHOD BUCKET KEY: signs one S3
// request with bufferlock's own signer (src/s3), its settings from the
// environment as bufferlock reads them (credentials, region, endpoint), and
// prints what curl needs to send it: the URL on the first line, then one
// "Name: value" line per header to add. The payload hash is FILE's SHA-256
// (the body to send), else that of an empty body; -u signs UNSIGNED-PAYLOAD.
// -t signs at that time (YYYYMMDDTHHMMSSZ) instead of now.
// For s3_fixture.bats: proves the signer against a server that checks it.
#include "s3/config.hpp"
#include "s3/credentials.hpp"
#include "s3/sigv4.hpp"
#include "util/crypto.hpp"
#include "util/hex.hpp"

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <unistd.h>

using namespace bufferlock;
using namespace bufferlock::s3;

namespace {

int fail(const std::string& why) {
  std::fprintf(stderr, "s3_sign: %s\n", why.c_str());
  return 1;
}

// The lowercase hex SHA-256 of a file, read in runs; empty on failure.
std::string file_sha256(const char* path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  Sha256 digest;
  char buf[1 << 16];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) digest.update({buf, static_cast<std::size_t>(in.gcount())});
  return to_hex(digest.finish());
}

Field query_field(const std::string& arg) {
  const std::size_t eq = arg.find('=');
  return eq == std::string::npos ? Field{arg, ""} : Field{arg.substr(0, eq), arg.substr(eq + 1)};
}

} // namespace

int main(int argc, char** argv) {
  const char* file = nullptr;
  bool unsigned_body = false;
  std::string when = amz_date(std::time(nullptr));
  std::vector<Field> query;
  for (int opt; (opt = getopt(argc, argv, "f:q:ut:")) != -1;) {
    if (opt == 'f') file = optarg;
    else if (opt == 't') when = optarg;
    else if (opt == 'q') query.push_back(query_field(optarg));
    else if (opt == 'u') unsigned_body = true;
    else return 64;
  }
  if (argc - optind != 3) {
    std::fprintf(stderr, "usage: s3_sign [-f FILE] [-q NAME[=VALUE]]... [-u] [-t AMZDATE] METHOD BUCKET KEY\n");
    return 64;
  }
  if (!crypto_error().empty()) return fail(crypto_error());
  const EnvLookup env = [](const char* name) { return std::getenv(name); };
  auto creds = load_credentials(env);
  if (creds.index() == 1) return fail(std::get<1>(creds));
  auto region = load_region(env);
  if (region.index() == 1) return fail(std::get<1>(region));
  auto endpoint = load_endpoint(env, std::get<0>(region));
  if (endpoint.index() == 1) return fail(std::get<1>(endpoint));

  const Target t = target(std::get<0>(endpoint), argv[optind + 1], argv[optind + 2]);
  std::string hash = unsigned_body ? std::string(unsigned_payload) : file ? file_sha256(file) : to_hex(sha256(""));
  if (hash.empty()) return fail(std::string("cannot read ") + file);
  const Request r{argv[optind], t.path, query, {{"host", t.host}}, hash};
  const Scope scope{std::get<0>(region), "s3", when};
  const std::string q = canonical_query(query);
  std::printf("%s%s%s\n", t.url.c_str(), q.empty() ? "" : "?", q.c_str());
  for (const auto& [name, value] : sign_s3(r, scope, std::get<0>(creds).credentials))
    std::printf("%s: %s\n", name.c_str(), value.c_str());
  return 0;
}
