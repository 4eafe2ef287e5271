// The --messages file (SPEC §11), through apply_message_overrides, the
// loader's in-memory half: never crashes, and whatever the file says, every
// message stays one line.
#include "fuzz.hpp"
#include "messages.hpp"

#include <algorithm>

using namespace bufferlock;

namespace {

constexpr Msg all_messages[] = {
#define BUFFERLOCK_FUZZ_MSG(key, text) Msg::key,
    BUFFERLOCK_MESSAGES(BUFFERLOCK_FUZZ_MSG)
#undef BUFFERLOCK_FUZZ_MSG
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  diag::set_verbosity(diag::Verbosity::quiet); // the warnings about bad lines
  static const std::string defaults = list_messages();
  apply_message_overrides(defaults, "defaults"); // each input starts from the catalogue
  apply_message_overrides(fuzz::as_text(data, size), "fuzz");
  const std::string hostile = "a\nb\r\x1b[2J\xff";
  for (const Msg m : all_messages) {
    const std::string text = message(m, {{"path", hostile}, {"error", hostile}, {"key", hostile},
                                         {"server", hostile}, {"option", "-x"}, {"value", hostile},
                                         {"line", "1"}, {"command", hostile}, {"holder", "pid 1"}});
    fuzz::check(std::find(text.begin(), text.end(), '\n') == text.end(), "a message spans lines");
  }
  return 0;
}
