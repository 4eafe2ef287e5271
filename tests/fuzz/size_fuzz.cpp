// parse_size (--max-entry, SPEC §15): never crashes; accepts only digits with
// one optional K, M or G at the end; what it accepts is the decimal number
// times the suffix's power of 1024, without overflow.
#include "fuzz.hpp"
#include "util/size.hpp"

#include <string>

using namespace bufferlock;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = fuzz::as_text(data, size);
  const auto v = parse_size(text);
  if (!v) return 0;
  std::string_view digits = text;
  unsigned shift = 0;
  if (!digits.empty() && (digits.back() == 'K' || digits.back() == 'M' || digits.back() == 'G')) {
    shift = digits.back() == 'K' ? 10 : digits.back() == 'M' ? 20 : 30;
    digits.remove_suffix(1);
  }
  fuzz::check(!digits.empty() && digits.find_first_not_of("0123456789") == std::string_view::npos,
              "a size outside the grammar was accepted");
  // The same number, computed another way: divide back and compare digits.
  std::uint64_t n = *v >> shift;
  fuzz::check((n << shift) == *v, "a suffix did not multiply by its power of 1024");
  std::string back;
  do {
    back.insert(back.begin(), static_cast<char>('0' + n % 10));
    n /= 10;
  } while (n != 0);
  const std::size_t zeros = digits.find_first_not_of('0');
  const std::string_view significant = zeros == std::string_view::npos ? "0" : digits.substr(zeros);
  fuzz::check(back == significant, "the value is not the number written");
  return 0;
}
