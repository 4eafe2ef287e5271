#include "s3/credentials.hpp"

#include <unistd.h>

namespace bufferlock::s3 {

namespace {

using Result = std::variant<FoundCredentials, std::string>;

Result from_environment(const EnvLookup& env) {
  auto key = env_text(env, "AWS_ACCESS_KEY_ID");
  auto secret = env_text(env, "AWS_SECRET_ACCESS_KEY");
  if (!secret) return std::string("AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not");
  return FoundCredentials{{*key, *secret, env_text(env, "AWS_SESSION_TOKEN").value_or("")}, "the environment"};
}

Result from_profile(const IniSection& keys, const std::string& where) {
  auto value = [&](const char* name) { return keys.contains(name) ? keys.at(name) : std::string(); };
  Credentials c{value("aws_access_key_id"), value("aws_secret_access_key"), value("aws_session_token")};
  if (c.access_key.empty()) return where + " has no aws_access_key_id";
  if (c.secret_key.empty()) return where + " has aws_access_key_id but no aws_secret_access_key";
  return FoundCredentials{std::move(c), where};
}

} // namespace

std::variant<FoundCredentials, std::string> load_credentials(const EnvLookup& env) {
  if (env_text(env, "AWS_ACCESS_KEY_ID")) return from_environment(env);
  const std::string profile = profile_name(env);
  const bool named = env_text(env, "AWS_PROFILE").has_value();
  const std::string path = credentials_file(env);
  if (path.empty())
    return std::string("no S3 credentials: AWS_ACCESS_KEY_ID is not set, and neither is HOME nor "
                       "AWS_SHARED_CREDENTIALS_FILE to find a credentials file");
  auto section = read_ini_section(path, profile);
  if (section.index() == 1) return std::get<1>(std::move(section));
  const auto& keys = std::get<0>(section);
  const std::string where = "profile " + profile + " of " + path;
  if (keys) return from_profile(*keys, where);
  const std::string missing =
      access(path.c_str(), F_OK) == 0 ? path + " has no [" + profile + "] section" : "there is no " + path;
  if (named) return "AWS_PROFILE is " + profile + ", but " + missing;
  return "no S3 credentials: AWS_ACCESS_KEY_ID is not set and " + missing;
}

} // namespace bufferlock::s3
