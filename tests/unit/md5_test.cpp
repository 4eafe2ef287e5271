#include "util/md5.hpp"

#include <openssl/evp.h>

#include <gtest/gtest.h>

#include <random>
#include <string>

using bufferlock::md5_hex;

namespace {

// The reference: OpenSSL's MD5, which the binary avoids for start-up cost.
std::string openssl_md5(const std::string& bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest, &len, EVP_md5(), nullptr);
  static const char hex[] = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < len; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 0xf];
  }
  return out;
}

} // namespace

TEST(Md5, KnownVectors) {
  EXPECT_EQ(md5_hex(""), "d41d8cd98f00b204e9800998ecf8427e");
  EXPECT_EQ(md5_hex("abc"), "900150983cd24fb0d6963f7d28e17f72");
  EXPECT_EQ(md5_hex("nightly-report"), openssl_md5("nightly-report"));
  EXPECT_EQ(md5_hex("The quick brown fox jumps over the lazy dog"), "9e107d9d372bb6826bd81d3542a419d6");
}

TEST(Md5, MatchesOpenSslAcrossBlockBoundaries) {
  std::mt19937 rng(42);
  for (std::size_t len = 0; len < 300; ++len) {
    std::string bytes(len, '\0');
    for (auto& c : bytes)
      c = static_cast<char>(rng());
    ASSERT_EQ(md5_hex(bytes), openssl_md5(bytes)) << "length " << len;
  }
}

TEST(Md5, MatchesOpenSslForTheLongestKey) {
  std::string key(131071, 'k');
  key[5] = '\xff';
  EXPECT_EQ(md5_hex(key), openssl_md5(key));
}

TEST(Md5, RawIsTheHexDigestsBytes) {
  // S3's Content-MD5 of "" is base64 of these 16 bytes: 1B2M2Y8AsgTpgAmY7PhCfg==.
  EXPECT_EQ(bufferlock::md5_raw(""),
            std::string("\xd4\x1d\x8c\xd9\x8f\x00\xb2\x04\xe9\x80\x09\x98\xec\xf8\x42\x7e", 16));
  EXPECT_EQ(bufferlock::md5_raw("abc").size(), 16u);
}
