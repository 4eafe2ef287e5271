// What the S3 client reads from S3's answers: XML values (a listing's keys,
// an upload id, an error code), and how a reply is told and classed.
#include "s3/client.hpp"

#include <gtest/gtest.h>

using namespace bufferlock::s3;

TEST(S3Xml, ValuesInOrderWithEntitiesDecoded) {
  const std::string page =
      "<?xml version=\"1.0\"?><ListBucketResult><IsTruncated>true</IsTruncated>"
      "<Contents><Key>p/a&amp;b.entry</Key><Size>12</Size></Contents>"
      "<Contents><Key>p/&lt;c&gt;&quot;&apos;</Key><Size>0</Size></Contents>"
      "<NextContinuationToken>tok+/=</NextContinuationToken></ListBucketResult>";
  EXPECT_EQ(xml_values(page, "Key"), (std::vector<std::string>{"p/a&b.entry", "p/<c>\"'"}));
  EXPECT_EQ(xml_values(page, "Size"), (std::vector<std::string>{"12", "0"}));
  EXPECT_EQ(xml_values(page, "NextContinuationToken"), (std::vector<std::string>{"tok+/="}));
  EXPECT_TRUE(xml_values(page, "UploadId").empty());
  // A tag left open ends the search.
  EXPECT_TRUE(xml_values("<Key>never closed", "Key").empty());
}

TEST(S3Reply, RefusedCredentialsAreToldApartFromMissingObjects) {
  EXPECT_TRUE((Reply{403, "", "SignatureDoesNotMatch"}).refused());
  EXPECT_TRUE((Reply{403, "", "InvalidAccessKeyId"}).refused());
  EXPECT_TRUE((Reply{403, "", "RequestTimeTooSkewed"}).refused());
  EXPECT_FALSE((Reply{403, "", "AccessDenied"}).refused());
  EXPECT_FALSE((Reply{0, "timed out", ""}).refused());
  EXPECT_TRUE((Reply{404, "", "NoSuchKey"}).missing());
  EXPECT_FALSE((Reply{200, "", "InternalError"}).ok()); // a completion that failed in a 200
  EXPECT_TRUE((Reply{206, "", ""}).ok());
}

TEST(S3Reply, TextNamesStatusAndCauseNeverMore) {
  EXPECT_EQ((Reply{503, "", "SlowDown"}).text(), "HTTP status 503 (SlowDown)");
  EXPECT_EQ((Reply{403, "", "SignatureDoesNotMatch"}).text(),
            "HTTP status 403 (SignatureDoesNotMatch: the secret key is not the key's)");
  EXPECT_EQ((Reply{403, "", "RequestTimeTooSkewed"}).text(),
            "HTTP status 403 (RequestTimeTooSkewed: this machine's clock is too far off)");
  EXPECT_EQ((Reply{500, "", ""}).text(), "HTTP status 500");
  EXPECT_EQ((Reply{0, "Couldn't connect to server", ""}).text(), "Couldn't connect to server");
}

// Content-MD5's encoding: RFC 4648's vectors.
TEST(S3Client, Base64) {
  EXPECT_EQ(base64(""), "");
  EXPECT_EQ(base64("f"), "Zg==");
  EXPECT_EQ(base64("fo"), "Zm8=");
  EXPECT_EQ(base64("foo"), "Zm9v");
  EXPECT_EQ(base64("foob"), "Zm9vYg==");
  EXPECT_EQ(base64("fooba"), "Zm9vYmE=");
  EXPECT_EQ(base64("foobar"), "Zm9vYmFy");
  EXPECT_EQ(base64(std::string("\xff\x00\xfe", 3)), "/wD+");
}

// DeleteObjects' body: quiet, every key escaped.
TEST(S3Client, DeleteRequest) {
  EXPECT_EQ(delete_request({"p/a.entry", "p/<&>"}),
            "<Delete><Quiet>true</Quiet><Object><Key>p/a.entry</Key></Object>"
            "<Object><Key>p/&lt;&amp;&gt;</Key></Object></Delete>");
}
