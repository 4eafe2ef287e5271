// The scan follows App::_recognize and App::_parse_arg of CLI11 2.1.2 step by
// step, so that the parser given only the options found reads argv exactly as
// it would with every option declared. The unit tests compare the two.
#include "argv_scan.hpp"

#include <string>
#include <utility>

namespace bufferlock {

namespace {

// CLI11's detail::valid_first_char: what may follow "-" or "--".
bool valid_first_char(char c) { return c != '-' && c != '!' && c != ' ' && c != '\n'; }

// The option one of whose names is `dashes` + `name` ("--" "wait", "-" "w"), or npos.
std::size_t find_option(std::span<const ScanOption> options, std::string_view dashes, std::string_view name) {
  for (std::size_t i = 0; i < options.size(); ++i) {
    std::string_view rest = options[i].names;
    while (!rest.empty()) {
      const std::size_t comma = rest.find(',');
      const std::string_view entry = rest.substr(0, comma);
      if (entry.size() == dashes.size() + name.size() && entry.starts_with(dashes) &&
          entry.substr(dashes.size()) == name)
        return i;
      rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    }
  }
  return std::string_view::npos;
}

} // namespace

void scan_options(std::span<const ScanOption> options, std::span<const char* const> words,
                  std::span<bool> named) {
  std::string pushed; // a bundle's rest after a flag, as CLI11 pushes it back: "-" + rest
  std::size_t i = 0;
  std::string_view word;
  bool have_word = false;
  while (have_word || i < words.size()) {
    if (!have_word) word = words[i++];
    have_word = false;
    if (word == "--") return;
    if (word.size() > 2 && word.starts_with("--") && valid_first_char(word[2])) {
      const std::size_t eq = word.find('=');
      const std::string_view name = word.substr(2, eq == std::string_view::npos ? eq : eq - 2);
      const std::size_t at = find_option(options, "--", name);
      if (at == std::string_view::npos) continue; // unknown: left for the caller, the next word read anew
      named[at] = true;
      if (options[at].takes_value && eq == std::string_view::npos) ++i; // its value, whatever it looks like
      continue;
    }
    if (word.size() > 1 && word[0] == '-' && valid_first_char(word[1])) {
      const std::size_t at = find_option(options, "-", word.substr(1, 1));
      // An unknown digit is a word, not an option ("-1": a KEY, refused later).
      if (at == std::string_view::npos && word[1] >= '0' && word[1] <= '9') return;
      if (at == std::string_view::npos) continue; // unknown: the whole word is left
      named[at] = true;
      const std::string_view rest = word.substr(2);
      if (options[at].takes_value) {
        if (rest.empty()) ++i; // "-w 5"; "-w5" holds its value
        continue;
      }
      if (!rest.empty()) {      // "-nv": the rest is read as the next word "-v"
        std::string next = "-"; // rest points into `pushed`: build apart
        next += rest;
        pushed = std::move(next);
        word = pushed;
        have_word = true;
      }
      continue;
    }
    return; // KEY: the first word that is no option
  }
}

} // namespace bufferlock
