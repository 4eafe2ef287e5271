#include "messages.hpp"

#include <array>

namespace bufferlock {

namespace {

struct Entry {
  std::string_view key;
  std::string_view text;
};

constexpr std::array catalogue = {
#define BUFFERLOCK_MSG_ENTRY(key, text) Entry{#key, text},
    BUFFERLOCK_MESSAGES(BUFFERLOCK_MSG_ENTRY)
#undef BUFFERLOCK_MSG_ENTRY
};

} // namespace

std::string_view message_key(Msg m) { return catalogue[static_cast<std::size_t>(m)].key; }

std::string message(Msg m, std::initializer_list<Placeholder> values) {
  return diag::substitute(catalogue[static_cast<std::size_t>(m)].text, values);
}

std::string display_key(std::string_view key) {
  constexpr std::size_t max_shown = 64;
  if (key.size() <= max_shown) return std::string(key);
  // Cut on a UTF-8 boundary so the shown part stays valid text.
  std::size_t cut = max_shown;
  while (cut > 0 && (static_cast<unsigned char>(key[cut]) & 0xc0) == 0x80) --cut;
  return std::string(key.substr(0, cut)) + "...";
}

} // namespace bufferlock
