// parse_duration (SPEC §2): never crashes; accepts only the grammar's
// characters; what it accepts is non-negative, and its three-decimal
// rendering parses back to within half a millisecond.
#include "fuzz.hpp"
#include "util/duration.hpp"

using namespace bufferlock;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = fuzz::as_text(data, size);
  for (const auto allow : {AllowInfinite::no, AllowInfinite::yes}) {
    const auto d = parse_duration(text, allow);
    if (!d) continue;
    if (*d == infinite_duration && text == "inf") {
      fuzz::check(allow == AllowInfinite::yes, "inf accepted where it is not allowed");
      continue;
    }
    fuzz::check(text.find_first_not_of("0123456789.msh") == std::string_view::npos,
                "a character outside the grammar was accepted");
    fuzz::check(d->count() >= 0, "negative duration");
    const auto again = parse_duration(format_seconds(*d), AllowInfinite::no);
    // The largest values round up past the 64-bit range when shown in ms.
    if (*d < infinite_duration - std::chrono::milliseconds(1)) {
      fuzz::check(again.has_value(), "format_seconds output does not parse");
      const auto diff = *again > *d ? *again - *d : *d - *again;
      fuzz::check(diff <= std::chrono::microseconds(500), "format_seconds round trip is off");
    }
  }
  return 0;
}
