#include "cache/http_store.hpp"
#include "http/url.hpp"

#include <gtest/gtest.h>

using namespace bufferlock;

TEST(StoreUrl, BaseWithoutCredentialsAndATrailingSlash) {
  auto u = std::get<StoreUrl>(parse_store_url("http://ci:s%3Acret@127.0.0.1:8080/cache"));
  EXPECT_EQ(u.base, "http://127.0.0.1:8080/cache/");
  EXPECT_EQ(u.user, "ci");
  EXPECT_EQ(u.password, "s:cret");
  EXPECT_EQ(u.display, "http://ci:***@127.0.0.1:8080/cache");
  EXPECT_FALSE(u.tls);
  u = std::get<StoreUrl>(parse_store_url("https://[::1]:8443"));
  EXPECT_EQ(u.base, "https://[::1]:8443/");
  EXPECT_TRUE(u.tls);
  EXPECT_TRUE(u.user.empty());
  EXPECT_EQ(std::get<StoreUrl>(parse_store_url("http://h/a/b/")).base, "http://h/a/b/");
}

TEST(StoreUrl, Refused) {
  for (const char* bad : {"http://", "http:///x", "http://h:/x", "http://h:0/", "http://h:x/", "http://h/a b",
                          "http://h/#f", "http://u:%zz@h/", "ftp://h/"})
    EXPECT_TRUE(std::holds_alternative<std::string>(parse_store_url(bad))) << bad;
  EXPECT_TRUE(is_http_store("https://x"));
  EXPECT_FALSE(is_http_store("redis"));
}

TEST(Propfind, NamesOfObjectsNotCollections) {
  const std::string xml = R"(<?xml version="1.0" encoding="utf-8" ?>
<D:multistatus xmlns:D="DAV:">
<D:response><D:href>/cache/</D:href><D:propstat><D:prop><D:resourcetype><D:collection/></D:resourcetype></D:prop></D:propstat></D:response>
<D:response><D:href>/cache/0123456789abcdef0123456789abcdef.entry</D:href></D:response>
<D:response><D:href>http://h/cache/a%20b.entry</D:href></D:response>
<d:response><d:href>/cache/sub/</d:href></d:response>
<response><href>/cache/plain</href></response>
</D:multistatus>)";
  EXPECT_EQ(propfind_names(xml),
            (std::vector<std::string>{"0123456789abcdef0123456789abcdef.entry", "a b.entry", "plain"}));
  EXPECT_TRUE(propfind_names("").empty());
  EXPECT_TRUE(propfind_names("<D:href>unterminated").empty());
}

TEST(HttpObject, FooterNamesTheHeaderLength) {
  const std::string f = encode_object_footer(300);
  ASSERT_EQ(f.size(), object_footer_size);
  EXPECT_EQ(f.substr(8), "BLCTAIL\n");
  EXPECT_EQ(f.substr(0, 8), std::string("\x2c\x01\0\0\0\0\0\0", 8)); // 300, little-endian
  std::string why;
  // Whatever comes before the footer: the tail is header, trailer, footer.
  EXPECT_EQ(object_tail_size("body bytes" + f, why), 300U + entry_trailer + object_footer_size);
  EXPECT_EQ(object_tail_size(f, why), 300U + entry_trailer + object_footer_size);
}

TEST(HttpObject, TailsOfOtherBytesAreNoEntries) {
  std::string why;
  const std::string f = encode_object_footer(100);
  EXPECT_FALSE(object_tail_size("", why));
  EXPECT_FALSE(object_tail_size(f.substr(1), why));          // too short for a footer
  EXPECT_FALSE(object_tail_size(f.substr(0, 15) + "X", why)); // another magic
  EXPECT_EQ(why, "not an entry");
  // A header shorter than any version's fixed part, or absurdly long.
  EXPECT_FALSE(object_tail_size(encode_object_footer(entry_fixed_header - 1), why));
  EXPECT_FALSE(object_tail_size(encode_object_footer(std::uint64_t{1} << 40), why));
  EXPECT_TRUE(object_tail_size(encode_object_footer(entry_fixed_header), why));
}
