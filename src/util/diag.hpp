// Diagnostics: one line each on stderr, prefixed "bufferlock: ". stdout
// belongs to the command, so nothing here ever writes there.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace bufferlock::diag {

enum class Verbosity { quiet, normal, verbose };

void set_verbosity(Verbosity v);
bool verbose();

// Called before each line is written, when set: the wait line takes itself
// off the screen there, so that a message never lands in the middle of it.
void set_before_line(void (*hook)());

// Errors are printed even under --quiet; warnings are not; debug only with -v.
void error(std::string_view text);
void warn(std::string_view text);
void debug(std::string_view text);

// debug() of a text built only when -v is on: `make` (returning the text)
// does not run otherwise, so hot paths pay nothing for their -v lines.
template <class Make> void debug_lazy(Make&& make) {
  if (verbose()) debug(make());
}

struct Placeholder {
  std::string_view name;
  std::string_view value;
};

// Replaces %{name} in `tmpl` by the value of the placeholder of that name.
// Values are made printable on one line: control bytes and bytes that are not
// valid UTF-8 become \xHH, so a hostile path or KEY cannot split a message.
// An unknown %{name} is left as written.
std::string substitute(std::string_view tmpl, std::span<const Placeholder> values);

// `bytes` with control characters and invalid UTF-8 escaped as \xHH.
std::string printable(std::string_view bytes);

} // namespace bufferlock::diag
