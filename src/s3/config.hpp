// Where an S3 store's settings come from, as the AWS tools read them (SPEC
// §19): the environment, then the shared files ~/.aws/credentials and
// ~/.aws/config (AWS_SHARED_CREDENTIALS_FILE, AWS_CONFIG_FILE), in the
// section of AWS_PROFILE (default "default"). The environment comes through
// an injected lookup, so that the tests need no real one.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace bufferlock::s3 {

// getenv's shape: null when unset.
using EnvLookup = std::function<const char*(const char*)>;

// A set, non-empty variable's value.
std::optional<std::string> env_text(const EnvLookup& env, const char* name);

// The profile the AWS_PROFILE variable names, else "default".
std::string profile_name(const EnvLookup& env);

// The shared files' paths: the variable's, else under $HOME/.aws/; empty
// when neither is set.
std::string credentials_file(const EnvLookup& env);
std::string config_file(const EnvLookup& env);

using IniSection = std::map<std::string, std::string>; // key (lowercase) = value, trimmed

// The keys of section `section` of an INI text as the AWS tools write it
// ('#' and ';' comment lines, "key = value", indented lines continuing a
// nested setting, which are skipped); nullopt when there is no such section.
std::optional<IniSection> ini_section(std::string_view text, std::string_view section);

// A file's section: the section, or nullopt when the file or the section
// does not exist; an error text when the file exists but cannot be read.
std::variant<std::optional<IniSection>, std::string> read_ini_section(const std::string& path,
                                                                      std::string_view section);

// The region: AWS_REGION, AWS_DEFAULT_REGION, the profile's "region" in the
// config file ([default] or [profile NAME]), else us-east-1; or why the
// config file could not be read.
std::variant<std::string, std::string> load_region(const EnvLookup& env);

// How requests reach a bucket.
struct Endpoint {
  std::string base;       // scheme://HOST[:PORT], no trailing '/'
  bool path_style = true; // /BUCKET/KEY on base, else KEY on BUCKET.HOST

  bool operator==(const Endpoint&) const = default;
};

// AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL (path-style there), else AWS's
// https://s3.REGION.amazonaws.com, virtual-hosted; or why the variable's URL
// is not one (http:// or https://, a host, no path).
std::variant<Endpoint, std::string> load_endpoint(const EnvLookup& env, const std::string& region);

// One object's request target on an endpoint.
struct Target {
  std::string host; // the Host header: HOST[:PORT]
  std::string path; // decoded, for the signer: /BUCKET/KEY or /KEY; an empty KEY (the bucket): /BUCKET or /
  std::string url;  // scheme://HOST[:PORT] + the encoded path (no query)
};

// A bucket named with a '.' is addressed path-style on AWS too: its
// virtual host would not match AWS's wildcard certificate.
Target target(const Endpoint& endpoint, std::string_view bucket, std::string_view key);

} // namespace bufferlock::s3
