// An S3 store's address, credentials and settings, from an injected
// environment and shared files written in a temporary directory.
#include "s3/config.hpp"
#include "s3/credentials.hpp"
#include "s3/url.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

using namespace bufferlock::s3;

namespace {

std::string url_error(std::string_view text) {
  auto r = parse_s3_url(text);
  return r.index() == 1 ? std::get<1>(r) : "(parsed)";
}

Location url(std::string_view text) {
  auto r = parse_s3_url(text);
  EXPECT_EQ(r.index(), 0u) << text << ": " << (r.index() == 1 ? std::get<1>(r) : "");
  return r.index() == 0 ? std::get<0>(r) : Location{};
}

// A fake environment and a HOME of its own.
class S3Settings : public ::testing::Test {
protected:
  void SetUp() override {
    char tmpl[] = "/tmp/bufferlock-s3-test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    home_ = tmpl;
    ASSERT_EQ(mkdir((home_ + "/.aws").c_str(), 0700), 0);
    vars_["HOME"] = home_;
  }
  void TearDown() override { std::filesystem::remove_all(home_); }

  EnvLookup env() const {
    return [this](const char* name) -> const char* {
      auto it = vars_.find(name);
      return it == vars_.end() ? nullptr : it->second.c_str();
    };
  }
  void write(const std::string& name, const std::string& text) const { std::ofstream(home_ + "/" + name) << text; }

  std::string credentials_error() const {
    auto r = load_credentials(env());
    return r.index() == 1 ? std::get<1>(r) : "(found)";
  }
  FoundCredentials credentials() const {
    auto r = load_credentials(env());
    EXPECT_EQ(r.index(), 0u) << (r.index() == 1 ? std::get<1>(r) : "");
    return r.index() == 0 ? std::get<0>(r) : FoundCredentials{};
  }
  std::string region() const {
    auto r = load_region(env());
    return r.index() == 0 ? std::get<0>(r) : "error: " + std::get<1>(r);
  }

  std::string home_;
  std::map<std::string, std::string> vars_;
};

const char* const two_profiles = "# comment\n"
                                 "[default]\n"
                                 "aws_access_key_id = AKIDDEFAULT\n"
                                 "aws_secret_access_key=secret-default\n"
                                 "\n"
                                 "[ci]\n"
                                 "; another comment\n"
                                 "AWS_Access_Key_ID = AKIDCI\n"
                                 "aws_secret_access_key = secret ci\n"
                                 "aws_session_token = token-ci\n";

} // namespace

TEST(S3Url, BucketAndPrefix) {
  EXPECT_EQ(url("s3://my-bucket/a/b"), (Location{"my-bucket", "a/b/"}));
  EXPECT_EQ(url("s3://my-bucket/a/b/"), (Location{"my-bucket", "a/b/"}));
  EXPECT_EQ(url("s3://my.bucket-1/cache"), (Location{"my.bucket-1", "cache/"}));
  EXPECT_EQ(url("s3://abc"), (Location{"abc", ""}));
  EXPECT_EQ(url("s3://abc/"), (Location{"abc", ""}));
  EXPECT_TRUE(is_s3_store("s3://"));
  EXPECT_FALSE(is_s3_store("http://x/"));
}

TEST(S3Url, BucketNamingRules) {
  const std::string chars = "a bucket name has only lowercase letters, digits, '.' and '-'";
  const std::string ends = "a bucket name begins and ends with a letter or a digit";
  const std::pair<std::string, std::string> refused[] = {
      {"s3://", "no bucket"},
      {"s3:///prefix", "no bucket"},
      {"s3://ab", "a bucket name has 3 to 63 characters"},
      {"s3://" + std::string(64, 'a'), "a bucket name has 3 to 63 characters"},
      {"s3://My-Bucket", chars},
      {"s3://my_bucket", chars},
      {"s3://-bucket", ends},
      {"s3://bucket.", ends},
      {"s3://my..bucket", "a bucket name has no \"..\""},
      {"s3://192.168.5.4", "a bucket name is not an IP address"},
      {"http://bucket/x", "expected an s3://BUCKET/PREFIX URL"},
  };
  for (const auto& [text, why] : refused) EXPECT_EQ(url_error(text), why) << text;
  EXPECT_EQ(url("s3://" + std::string(63, 'a')).bucket.size(), 63u);
}

TEST(S3Url, PrefixRules) {
  const std::string folder = "an empty, \".\" or \"..\" folder in its prefix";
  const std::pair<std::string, std::string> refused[] = {
      {"s3://bucket/a//b", folder},
      {"s3://bucket/a/../b", folder},
      {"s3://bucket/./b", folder},
      {"s3://bucket//", folder},
      {"s3://bucket/a b", "a blank or control byte in its prefix"},
      {"s3://bucket/a?x=1", "a query or fragment has no place in it"},
  };
  for (const auto& [text, why] : refused) EXPECT_EQ(url_error(text), why) << text;
}

TEST(IniSection, ReadsTheNamedSectionOnly) {
  auto s = ini_section(two_profiles, "ci");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->at("aws_access_key_id"), "AKIDCI");
  EXPECT_EQ(s->at("aws_secret_access_key"), "secret ci");
  EXPECT_FALSE(ini_section(two_profiles, "nope"));
  // An indented line belongs to a nested setting, not to the profile.
  auto nested = ini_section("[profile x]\ns3 =\n  region = eu-west-1\nregion = us-west-2\n", "profile x");
  ASSERT_TRUE(nested);
  EXPECT_EQ(nested->at("region"), "us-west-2");
  EXPECT_TRUE(ini_section("[empty]\n", "empty")->empty());
}

TEST_F(S3Settings, EnvironmentFirst) {
  write(".aws/credentials", two_profiles);
  vars_["AWS_ACCESS_KEY_ID"] = "AKIDENV";
  vars_["AWS_SECRET_ACCESS_KEY"] = "secret-env";
  vars_["AWS_SESSION_TOKEN"] = "token-env";
  const auto found = credentials();
  EXPECT_EQ(found.credentials, (Credentials{"AKIDENV", "secret-env", "token-env"}));
  EXPECT_EQ(found.source, "the environment");
}

TEST_F(S3Settings, KeyWithoutSecretIsAnError) {
  vars_["AWS_ACCESS_KEY_ID"] = "AKIDENV";
  EXPECT_EQ(credentials_error(), "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not");
}

TEST_F(S3Settings, DefaultProfileOfTheCredentialsFile) {
  write(".aws/credentials", two_profiles);
  const auto found = credentials();
  EXPECT_EQ(found.credentials, (Credentials{"AKIDDEFAULT", "secret-default", ""}));
  EXPECT_EQ(found.source, "profile default of " + home_ + "/.aws/credentials");
}

TEST_F(S3Settings, NamedProfileAndFileFromTheEnvironment) {
  write("creds", two_profiles);
  vars_["AWS_SHARED_CREDENTIALS_FILE"] = home_ + "/creds";
  vars_["AWS_PROFILE"] = "ci";
  EXPECT_EQ(credentials().credentials, (Credentials{"AKIDCI", "secret ci", "token-ci"}));
}

TEST_F(S3Settings, MissingProfileNamesWhereItLooked) {
  write(".aws/credentials", two_profiles);
  vars_["AWS_PROFILE"] = "prod";
  EXPECT_EQ(credentials_error(), "AWS_PROFILE is prod, but " + home_ + "/.aws/credentials has no [prod] section");
}

TEST_F(S3Settings, NoCredentialsAnywhere) {
  EXPECT_EQ(credentials_error(), "no S3 credentials: AWS_ACCESS_KEY_ID is not set and there is no " + home_ +
                                     "/.aws/credentials");
  write(".aws/credentials", "[other]\n");
  EXPECT_EQ(credentials_error(), "no S3 credentials: AWS_ACCESS_KEY_ID is not set and " + home_ +
                                     "/.aws/credentials has no [default] section");
  vars_.erase("HOME");
  EXPECT_NE(credentials_error().find("neither is HOME nor AWS_SHARED_CREDENTIALS_FILE"), std::string::npos);
}

TEST_F(S3Settings, ProfileWithoutSecretNeverPrintsAnything) {
  write(".aws/credentials", "[default]\naws_access_key_id = AKIDONLY\n[x]\naws_secret_access_key = hush\n");
  EXPECT_EQ(credentials_error(),
            "profile default of " + home_ + "/.aws/credentials has aws_access_key_id but no aws_secret_access_key");
  vars_["AWS_PROFILE"] = "x";
  const std::string e = credentials_error();
  EXPECT_EQ(e, "profile x of " + home_ + "/.aws/credentials has no aws_access_key_id");
  EXPECT_EQ(e.find("hush"), std::string::npos);
}

TEST_F(S3Settings, UnreadableCredentialsFileIsAnError) {
  if (geteuid() == 0) GTEST_SKIP() << "root reads any file";
  write(".aws/credentials", two_profiles);
  chmod((home_ + "/.aws/credentials").c_str(), 0);
  EXPECT_NE(credentials_error().find("cannot read " + home_ + "/.aws/credentials: "), std::string::npos);
}

TEST_F(S3Settings, RegionOrder) {
  EXPECT_EQ(region(), "us-east-1");
  write(".aws/config", "[default]\nregion = eu-central-1\n[profile ci]\nregion = ap-south-1\n[ci]\nregion = wrong\n");
  EXPECT_EQ(region(), "eu-central-1");
  vars_["AWS_PROFILE"] = "ci";
  EXPECT_EQ(region(), "ap-south-1");
  write("cfg", "[profile ci]\nregion = sa-east-1\n");
  vars_["AWS_CONFIG_FILE"] = home_ + "/cfg";
  EXPECT_EQ(region(), "sa-east-1");
  vars_["AWS_DEFAULT_REGION"] = "us-west-1";
  EXPECT_EQ(region(), "us-west-1");
  vars_["AWS_REGION"] = "us-west-2";
  EXPECT_EQ(region(), "us-west-2");
}

TEST_F(S3Settings, EndpointAndAddressing) {
  auto endpoint = [this] {
    auto r = load_endpoint(env(), "eu-west-1");
    return r.index() == 0 ? std::get<0>(r) : Endpoint{"error: " + std::get<1>(r), false};
  };
  EXPECT_EQ(endpoint(), (Endpoint{"https://s3.eu-west-1.amazonaws.com", false}));
  vars_["AWS_ENDPOINT_URL"] = "http://127.0.0.1:9000/";
  EXPECT_EQ(endpoint(), (Endpoint{"http://127.0.0.1:9000", true}));
  vars_["AWS_ENDPOINT_URL_S3"] = "https://minio.example:9443";
  EXPECT_EQ(endpoint(), (Endpoint{"https://minio.example:9443", true}));
  vars_["AWS_ENDPOINT_URL_S3"] = "ftp://x";
  EXPECT_EQ(endpoint().base,
            "error: AWS_ENDPOINT_URL_S3 is not an http:// or https:// URL with a host and no path");
  vars_["AWS_ENDPOINT_URL_S3"] = "http://host/path";
  EXPECT_EQ(endpoint().base.substr(0, 6), "error:");
}

TEST(S3Target, PathStyleVirtualHostedAndDottedBuckets) {
  const Target path = target({"http://127.0.0.1:9000", true}, "bkt", "pre/a b");
  EXPECT_EQ(path.host, "127.0.0.1:9000");
  EXPECT_EQ(path.path, "/bkt/pre/a b");
  EXPECT_EQ(path.url, "http://127.0.0.1:9000/bkt/pre/a%20b");
  EXPECT_EQ(target({"http://127.0.0.1:9000", true}, "bkt", "").url, "http://127.0.0.1:9000/bkt");
  EXPECT_EQ(target({"https://s3.us-east-1.amazonaws.com", false}, "bkt", "").url,
            "https://bkt.s3.us-east-1.amazonaws.com/");
  const Target virt = target({"https://s3.us-east-1.amazonaws.com", false}, "bkt", "k");
  EXPECT_EQ(virt.host, "bkt.s3.us-east-1.amazonaws.com");
  EXPECT_EQ(virt.url, "https://bkt.s3.us-east-1.amazonaws.com/k");
  const Target dotted = target({"https://s3.us-east-1.amazonaws.com", false}, "b.kt", "k");
  EXPECT_EQ(dotted.url, "https://s3.us-east-1.amazonaws.com/b.kt/k");
}
