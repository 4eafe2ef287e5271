// The SigV4 signer against AWS's published vectors: the aws-sig-v4-test-suite
// (service "service", 2015-08-30) and the examples of S3's own SigV4 pages
// (examplebucket, 2013-05-24).
#include "s3/sigv4.hpp"
#include "util/crypto.hpp"
#include "util/hex.hpp"

#include <gtest/gtest.h>

using namespace bufferlock;
using namespace bufferlock::s3;

namespace {

// The test suite's credentials and scope.
const Credentials suite_key{"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", ""};
const Scope suite_scope{"us-east-1", "service", "20150830T123600Z"};
const std::string suite_credential = "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, ";

// S3's examples.
const Credentials s3_key{"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ""};
const Scope s3_scope{"us-east-1", "s3", "20130524T000000Z"};
const std::string empty_sha256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

Request suite_request(std::string method, std::vector<Field> query = {}, std::vector<Field> more = {},
                      std::string body = "") {
  Request r{std::move(method), "/", std::move(query),
            {{"Host", "example.amazonaws.com"}, {"X-Amz-Date", "20150830T123600Z"}}, to_hex(sha256(body))};
  r.headers.insert(r.headers.end(), more.begin(), more.end());
  return r;
}

std::string suite_authz(const std::string& signed_headers, const std::string& signature) {
  return suite_credential + "SignedHeaders=" + signed_headers + ", Signature=" + signature;
}

// What sign_s3 adds, by name.
std::string added(const std::vector<Field>& headers, const std::string& name) {
  for (const auto& [n, v] : headers)
    if (n == name) return v;
  return "(none)";
}

class SigV4 : public ::testing::Test {
protected:
  void SetUp() override { ASSERT_EQ(crypto_error(), ""); }
};

} // namespace

TEST_F(SigV4, Sha256AndHmacOfKnownInputs) {
  EXPECT_EQ(to_hex(sha256("")), empty_sha256);
  // RFC 4231, test case 2.
  EXPECT_EQ(to_hex(hmac_sha256("Jefe", "what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  Sha256 runs;
  runs.update("Param1=");
  runs.update("value1");
  EXPECT_EQ(runs.finish(), sha256("Param1=value1"));
}

TEST_F(SigV4, SuiteGetVanilla) {
  EXPECT_EQ(authorization(suite_request("GET"), suite_scope, suite_key),
            suite_authz("host;x-amz-date", "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"));
}

TEST_F(SigV4, SuiteGetVanillaQueryOrderKeyCase) {
  const Request r = suite_request("GET", {{"Param2", "value2"}, {"Param1", "value1"}});
  EXPECT_EQ(canonical_query(r.query), "Param1=value1&Param2=value2");
  EXPECT_EQ(authorization(r, suite_scope, suite_key),
            suite_authz("host;x-amz-date", "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"));
}

TEST_F(SigV4, SuiteGetVanillaQueryUnreserved) {
  const std::string unreserved = "-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  EXPECT_EQ(authorization(suite_request("GET", {{unreserved, unreserved}}), suite_scope, suite_key),
            suite_authz("host;x-amz-date", "9c3e54bfcdf0b19771a7f523ee5669cdf59bc7cc0884027167c21bb143a40197"));
}

TEST_F(SigV4, SuiteGetUtf8Path) {
  Request r = suite_request("GET");
  r.path = "/\xe1\x88\xb4";
  EXPECT_EQ(encode_path(r.path), "/%E1%88%B4");
  EXPECT_EQ(authorization(r, suite_scope, suite_key),
            suite_authz("host;x-amz-date", "8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85"));
}

TEST_F(SigV4, SuitePostVanillaQueryNonunreserved) {
  const Request r = suite_request("POST", {{"@#$%^", ""}, {"+", "/,?><`\";:\\|][{}"}});
  EXPECT_EQ(authorization(r, suite_scope, suite_key),
            suite_authz("host;x-amz-date", "66c82657c86e26fb25238d0e69f011edc4c6df5ae71119d7cb98ed9b87393c1e"));
}

TEST_F(SigV4, SuitePostXWwwFormUrlencoded) {
  const Request r =
      suite_request("POST", {}, {{"Content-Type", "application/x-www-form-urlencoded"}}, "Param1=value1");
  EXPECT_EQ(authorization(r, suite_scope, suite_key),
            suite_authz("content-type;host;x-amz-date",
                        "ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a"));
}

TEST_F(SigV4, SuiteHeaderValueTrimmedAndSpacesCollapsed) {
  const Request r = suite_request("GET", {}, {{"My-Header1", " value1"}, {"My-Header2", " \"a   b   c\" "}});
  EXPECT_NE(canonical_request(r).find("my-header2:\"a b c\"\n"), std::string::npos);
  EXPECT_EQ(authorization(r, suite_scope, suite_key),
            suite_authz("host;my-header1;my-header2;x-amz-date",
                        "acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736"));
}

TEST_F(SigV4, SuiteHeaderKeyDuplicateJoinedInOrder) {
  const Request r = suite_request("GET", {}, {{"My-Header1", "value2"}, {"My-Header1", "value2"}, {"My-Header1", "value1"}});
  EXPECT_EQ(authorization(r, suite_scope, suite_key),
            suite_authz("host;my-header1;x-amz-date",
                        "c9d5ea9f3f72853aea855b47ea873832890dbdd183b4468f858259531a5138ea"));
}

TEST_F(SigV4, SuitePostStsHeaderBeforeSignsTheSessionToken) {
  const std::string token =
      "AQoDYXdzEPT//////////wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPfIeoIYRqTflfKD8YUu"
      "wthAx7mSEI/qkPpKPi/kMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQDYwT7WZ0wq5VSXDvp75YU9HFvlRd8Tx6q6fE8YQcH"
      "NVXAkiY9q6d+xo0rKwT38xVqr7ZD0u0iPPkUL64lIZbqBAz+scqKmlzm8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iSIlTJabIQwj2ICCR/oL"
      "xBA==";
  const Request r = suite_request("POST", {}, {{"X-Amz-Security-Token", token}});
  EXPECT_EQ(authorization(r, suite_scope, {suite_key.access_key, suite_key.secret_key, token}),
            suite_authz("host;x-amz-date;x-amz-security-token",
                        "85d96828115b5dc0cfc3bd16ad9e210dd772bbebba041836c64533a82be05ead"));
}

// S3's "Example: GET Object": a Range header, the empty payload's hash.
TEST_F(SigV4, S3ExampleGetObject) {
  const Request r{"GET", "/test.txt", {}, {{"Host", "examplebucket.s3.amazonaws.com"}, {"Range", "bytes=0-9"}},
                  empty_sha256};
  const auto headers = sign_s3(r, s3_scope, s3_key);
  EXPECT_EQ(added(headers, "x-amz-date"), "20130524T000000Z");
  EXPECT_EQ(added(headers, "x-amz-content-sha256"), empty_sha256);
  EXPECT_EQ(added(headers, "x-amz-security-token"), "(none)");
  EXPECT_EQ(added(headers, "Authorization"),
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
            "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
            "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

// "Example: PUT Object": a '$' in the key, the body's hash, extra headers.
TEST_F(SigV4, S3ExamplePutObject) {
  const Request r{"PUT",
                  "/test$file.text",
                  {},
                  {{"Host", "examplebucket.s3.amazonaws.com"},
                   {"Date", "Fri, 24 May 2013 00:00:00 GMT"},
                   {"x-amz-storage-class", "REDUCED_REDUNDANCY"}},
                  to_hex(sha256("Welcome to Amazon S3."))};
  EXPECT_EQ(encode_path(r.path), "/test%24file.text");
  const std::string authz = added(sign_s3(r, s3_scope, s3_key), "Authorization");
  EXPECT_NE(authz.find("SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class, "
                       "Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd"),
            std::string::npos)
      << authz;
}

// "Example: GET Bucket Lifecycle": a valueless parameter is signed as "lifecycle=".
TEST_F(SigV4, S3ExampleValuelessQueryKeepsItsEquals) {
  const Request r{"GET", "/", {{"lifecycle", ""}}, {{"Host", "examplebucket.s3.amazonaws.com"}}, empty_sha256};
  EXPECT_EQ(canonical_query(r.query), "lifecycle=");
  EXPECT_NE(added(sign_s3(r, s3_scope, s3_key), "Authorization")
                .find("Signature=fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543"),
            std::string::npos);
}

// "Example: GET Bucket (List Objects)": parameters given out of order are sorted.
TEST_F(SigV4, S3ExampleListSortsTheQuery) {
  const Request r{"GET", "/", {{"prefix", "J"}, {"max-keys", "2"}}, {{"Host", "examplebucket.s3.amazonaws.com"}},
                  empty_sha256};
  EXPECT_NE(added(sign_s3(r, s3_scope, s3_key), "Authorization")
                .find("Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"),
            std::string::npos);
}

TEST_F(SigV4, SessionTokenIsSentAndSigned) {
  const Request r{"GET", "/k", {}, {{"Host", "h"}}, std::string(unsigned_payload)};
  const auto headers = sign_s3(r, s3_scope, {"AKID", "SECRET", "TOKEN"});
  EXPECT_EQ(added(headers, "x-amz-security-token"), "TOKEN");
  EXPECT_EQ(added(headers, "x-amz-content-sha256"), "UNSIGNED-PAYLOAD");
  EXPECT_NE(added(headers, "Authorization").find("SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token,"),
            std::string::npos);
  EXPECT_EQ(added(headers, "Authorization").find("SECRET"), std::string::npos);
}

TEST_F(SigV4, MultipartQueriesAreSortedAndKeepTheirEquals) {
  EXPECT_EQ(canonical_query({{"uploads", ""}}), "uploads=");
  EXPECT_EQ(canonical_query({{"uploadId", "a/b+c"}, {"partNumber", "2"}}), "partNumber=2&uploadId=a%2Fb%2Bc");
  EXPECT_EQ(encode_path("/bucket/pre fix/k~e_y.-+"), "/bucket/pre%20fix/k~e_y.-%2B");
}

TEST_F(SigV4, AmzDateIsUtc) {
  EXPECT_EQ(amz_date(1440938160), "20150830T123600Z");
  EXPECT_EQ(amz_date(0), "19700101T000000Z");
}
