// Running the command: exec in place, or as a supervised child. All child
// handling lives here (STYLE point 8).
#pragma once

#include "util/duration.hpp"

#include <signal.h>
#include <sys/types.h>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace bufferlock {

// Replaces this process by the command (PATH search as execvp). Returns only
// on failure, after printing why, with the status to exit with: 127 when the
// command was not found, 126 when it was found but could not be executed.
int exec_command(const std::vector<std::string>& argv);

// A command that is not found is then reported with "did you mean
// 'bufferlock SUBCOMMAND'?" (KEY was a slip for that subcommand).
void suggest_subcommand_when_not_found(std::string_view subcommand);

// The longest KEY for which "BUFFERLOCK_KEY=KEY" fits in one environment
// string (the kernel's MAX_ARG_STRLEN of 131072 bytes, NUL included).
inline constexpr std::size_t max_env_key = 131072 - sizeof("BUFFERLOCK_KEY=");

// Removes every BUFFERLOCK_* variable that describes a held lock (KEY,
// BACKEND, FD, TOKEN, REDIS_KEY, SLOT, FENCE, ALSO_SLOT, ALSO_FENCE) from this process's environment, so that a
// command never inherits the description of somebody else's lock.
void scrub_lock_env();

// The exit status a wait(2) status stands for: the code, or 128+N for signal N.
int exit_status_from_wait(int wait_status);

// Called while the child runs (lock renewal): first at `first_at`, then at
// the time each call returns. Times are monotonic (util/clock.hpp) and
// absolute, so the time a call itself took (a renewal that timed out) never
// shifts the next one; infinite_duration: never again.
struct Ticker {
  Nanos first_at;
  std::function<Nanos(pid_t child)> tick;
};

// Receives the command's stdout, chunk by chunk, when it is captured.
using OutputSink = std::function<void(const char* data, std::size_t len)>;

// For a sink that has to wait (an upload whose server is slow): passes on
// the signals that came meanwhile and runs a renewal tick that fell due,
// then returns false once the command has ended with a failure (nothing of
// its output is kept: a sink need not wait any more) or a stop signal came
// after its end, true otherwise. Outside run_child: false once a stop
// signal waits (stop_signal), else true.
bool while_sink_waits();

// The stop signals, INT, TERM and HUP, end bufferlock's own work when no
// command claims them. Work that must not leave half of itself behind (an
// --output restore, the upload after a build) holds them back while it runs
// and asks between its parts whether one came; then it undoes what it did
// and bufferlock exits 128+N. run_child leaves them held back after the
// command's end.
class HoldStopSignals {
public:
  HoldStopSignals();
  ~HoldStopSignals() { end(); }
  HoldStopSignals(const HoldStopSignals&) = delete;
  HoldStopSignals& operator=(const HoldStopSignals&) = delete;
  // Lets them through again as before; the one that came meanwhile, or 0.
  // A signal held back before stays pending; one this hold kept back is
  // taken, so that it does not end the process here.
  int end();

private:
  sigset_t old_;
  bool held_ = true;
};

// The stop signal that came for bufferlock and waits, held back, or 0.
// While run_child's command runs, those are the command's (passed on to it);
// one that comes after the command's end is bufferlock's.
int stop_signal();

// The error text of work abandoned for a stop signal: never shown, the
// caller exits 128+N.
inline constexpr const char* stopped_by_signal = "interrupted by a signal";

// Forks and runs the command as a child while this process waits: the signals
// INT TERM HUP QUIT USR1 USR2 WINCH are passed on to it, and the child gets
// SIGTERM if this process dies. Descriptors stay out of the child only if they
// are close-on-exec. With a sink, the child's stdout is a pipe whose data goes
// to the sink as it comes, until EOF; the same for stderr with `err_sink`.
// Returns the child's exit status
// (exit_status_from_wait), or 126/127 when it could not be started.
int run_child(const std::vector<std::string>& argv, const Ticker* ticker = nullptr,
              const OutputSink* sink = nullptr, const OutputSink* err_sink = nullptr);

} // namespace bufferlock
