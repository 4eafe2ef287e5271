// A one-line progress text for a terminal (the wait line): compact durations,
// and fitting the parts into the terminal's width. Pure, for the unit tests;
// drawing it is the caller's business.
#pragma once

#include "util/duration.hpp"

#include <cstddef>
#include <string>
#include <string_view>

namespace bufferlock {

// "0s", "41s", "3m12s", "10m", "1h05m", "2d03h": whole seconds, rounded down.
std::string short_duration(Nanos d);

// The columns `text` takes: one per UTF-8 code point (wide characters are
// counted as one; the line then only ends up shorter than it could be cut).
std::size_t text_columns(std::string_view text);

// `text` cut to at most `columns` columns on a code-point boundary, ending in
// "..." when anything was cut.
std::string cut_to_columns(std::string_view text, std::size_t columns);

// LEAD 'SUBJECT' (DETAIL) TAIL, e.g.
//   bufferlock: waiting for 'deploy-prod' (held by pid 42 for 3m12s) 41s / 10m
struct ProgressLine {
  std::string_view lead;    // "bufferlock: waiting for"
  std::string_view subject; // printable already (display_key)
  std::string_view detail;  // may be empty: then no parentheses
  std::string_view tail;    // "41s / 10m"
};

// The line in fewer than `width` columns (the last column is left free: some
// terminals wrap when it is written). What gives way first is the detail
// (cut, then dropped), then the subject (cut to a few columns), then the
// end of the line.
std::string fit_progress_line(const ProgressLine& line, std::size_t width);

} // namespace bufferlock
