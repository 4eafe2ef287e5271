// The pure parts of Redis Cluster (SPEC §13): which slot a key hashes to,
// the companion keys that must share it, and the MOVED / ASK redirections.
#pragma once


#include <optional>
#include <string>
#include <string_view>

namespace bufferlock {

// CRC16 (XMODEM) of the key's hash tag (the text between the first '{' and
// the next '}', when not empty) or of the whole key, modulo 16384: the slot
// `CLUSTER KEYSLOT` gives.
int key_hash_slot(std::string_view key);

// `key` + `suffix` in the slot of `key`: "{KEY}SUFFIX" when KEY has no
// braces, KEY + SUFFIX when KEY carries its own hash tag ({PREFIX}MD5 with
// --hash-tag). A key with stray braces but no tag keeps KEY + SUFFIX.
std::string companion_key(std::string_view key, std::string_view suffix);

// A redirection in an error reply: "MOVED 3999 127.0.0.1:6381" or
// "ASK 3999 127.0.0.1:6381".
struct Redirect {
  enum class Kind { moved, ask };
  Kind kind;
  int slot;
  std::string host; // brackets of an IPv6 address removed
  int port;
};

std::optional<Redirect> parse_redirect(std::string_view error_text);

// "TRYAGAIN ...": a multi-key command met a slot in mid-migration, with some
// of its keys on each side. It succeeds once the migration of that slot is
// over: within milliseconds for a slot of few keys, a second or more for one
// whose many keys MIGRATE moves in batches (SPEC §13).
bool is_tryagain(std::string_view error_text);

} // namespace bufferlock
