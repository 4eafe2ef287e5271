// Constant tables of strings without pointers. The binary is a
// position-independent executable: every pointer a table holds is a
// relocation that each start applies (about 9 instructions each, before
// main), and the option table and the message catalogue held 600 of them.
// Packed, a table is one array of characters and the offsets and lengths of
// its strings: plain numbers, nothing to relocate. The table is written as
// ever (a constexpr array of structs of string_views, used only at compile
// time, so never emitted) and packed by pack_strings. Each packed string is
// followed by a NUL: data() of a string got from the table is a C string.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <tuple>

namespace bufferlock {

// `Rows` rows of `Fields` strings each, in `Chars` characters.
template <std::size_t Rows, std::size_t Fields, std::size_t Chars>
struct PackedStrings {
  struct Span {
    std::uint32_t offset = 0;
    std::uint32_t length = 0;
  };
  std::array<char, Chars> chars{};
  std::array<std::array<Span, Fields>, Rows> spans{};

  static constexpr std::size_t size() { return Rows; }
  constexpr std::string_view get(std::size_t row, std::size_t field) const {
    const Span s = spans[row][field];
    return {chars.data() + s.offset, s.length};
  }
};

// The characters of the strings that `fields(row)` gives for each row of
// `source` (a std::array of any row type): the size pack_strings needs.
template <typename Source, typename Fields>
constexpr std::size_t packed_chars(const Source& source, Fields fields) {
  std::size_t n = 0;
  for (const auto& row : source)
    for (std::string_view s : fields(row))
      n += s.size() + 1; // and its NUL
  return n;
}

// The strings `fields(row)` gives (a std::array<std::string_view, F>) of
// each row of `source`, packed. Chars: packed_chars(source, fields).
template <std::size_t Chars, typename Source, typename Fields>
constexpr auto pack_strings(const Source& source, Fields fields) {
  constexpr std::size_t rows = std::tuple_size_v<Source>;
  constexpr std::size_t width = std::tuple_size_v<decltype(fields(source[0]))>;
  PackedStrings<rows, width, Chars> out{};
  std::uint32_t at = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    std::size_t f = 0;
    for (std::string_view s : fields(source[r])) {
      out.spans[r][f++] = {at, static_cast<std::uint32_t>(s.size())};
      for (char c : s)
        out.chars[at++] = c;
      out.chars[at++] = '\0';
    }
  }
  return out;
}

} // namespace bufferlock
