// An S3 store's credentials (SPEC §19): AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN, else the AWS_PROFILE section
// of the shared credentials file. Errors name where credentials were looked
// for, never a secret.
#pragma once

#include "s3/config.hpp"
#include "s3/sigv4.hpp"

#include <string>
#include <variant>

namespace bufferlock::s3 {

struct FoundCredentials {
  Credentials credentials;
  std::string source; // "the environment" or "profile NAME of FILE": for -v, never a secret
};

std::variant<FoundCredentials, std::string> load_credentials(const EnvLookup& env);

} // namespace bufferlock::s3
