// The process's own argument words as the kernel shows them (/proc/PID/cmdline,
// ps): rewritten in place, so that a secret given on the command line stops
// being on display to every user of the machine.
#pragma once

#include <cstddef>
#include <string_view>

namespace bufferlock {

// Replaces the bytes [pos, pos + len) of argv[index] by `with` (at most `len`
// bytes). The words stored after it in the same memory move down by the
// difference (their argv pointers with them) and the bytes freed at the end
// become NULs, so that cmdline shows "a ***@b" rather than a gap; words that are
// not laid out one after the other (a caller's own array) stay where they are.
void rewrite_arg(int argc, char** argv, int index, std::size_t pos, std::size_t len, std::string_view with);

} // namespace bufferlock
