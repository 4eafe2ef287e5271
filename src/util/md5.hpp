// MD5 of a byte string as 32 lowercase hex digits: the lock's name (SPEC §6, §7).
// A small built-in implementation, because OpenSSL 3's first EVP call costs
// millions of instructions at start-up (see ARCHITECTURE.md); the unit tests
// check it against OpenSSL.
#pragma once

#include <string>
#include <string_view>

namespace bufferlock {

std::string md5_hex(std::string_view bytes);
// The same digest as its 16 raw bytes (S3's Content-MD5 is their base64).
std::string md5_raw(std::string_view bytes);

} // namespace bufferlock
