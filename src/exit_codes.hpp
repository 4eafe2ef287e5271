// The one exit-status table (SPEC §5); man/bufferlock.1 EXIT STATUS mirrors it.
#pragma once

namespace bufferlock::exit_code {

inline constexpr int ok = 0;
inline constexpr int usage = 64; // EX_USAGE: bad option or value, missing KEY/command
inline constexpr int error = 69; // EX_UNAVAILABLE: the lock could not be taken (default of --error-exit)
inline constexpr int busy = 75;  // EX_TEMPFAIL: held elsewhere or --wait ran out (default of --busy-exit)
inline constexpr int cannot_execute = 126; // command found but not executable
inline constexpr int not_found = 127;      // command not found
inline constexpr int signal_base = 128;    // command killed by signal N -> 128 + N

} // namespace bufferlock::exit_code
