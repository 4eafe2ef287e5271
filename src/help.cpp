#include "help.hpp"

#ifndef BUFFERLOCK_VERSION
#error "BUFFERLOCK_VERSION must be defined by the build"
#endif

namespace bufferlock {

std::string_view help_text() {
  return R"(Usage:
  bufferlock [OPTIONS] KEY [--] COMMAND [ARG...]   run COMMAND under the lock for KEY
  bufferlock [OPTIONS] KEY -c 'SHELL COMMAND'      the same through /bin/sh -c
  bufferlock run [OPTIONS] KEY [--] COMMAND...     explicit form (for a KEY named like a subcommand)
  bufferlock status [OPTIONS] KEY                  print "free" or "held pid=N"
  bufferlock --help | --version

Takes a named lock for KEY, then runs COMMAND, or skips it when someone else
holds the lock, and says which by its exit status. Options come before KEY;
everything after KEY is the command, verbatim.

Backend:
  -d, --dir DIR            lock files in DIR (env BUFFERLOCK_DIR; default
                           $XDG_RUNTIME_DIR/bufferlock, else /tmp/bufferlock-UID)

Waiting:
  -n, --nonblock           try once; if busy, skip the command (the default)
  -w, --wait, --timeout SECONDS
                           wait up to SECONDS (5, 0.25, 250ms, 2m, inf; 0 = -n;
                           env BUFFERLOCK_WAIT)

Exit codes:
  -E, --busy-exit, --conflict-exit-code N
                           status when busy or the wait ran out (default 75)
      --error-exit N       status when the lock could not be taken (default 69)
      --fail-open          on a lock error, warn and run the command anyway

Running:
  -c, --command STRING     run STRING with /bin/sh -c
  -s, --shared             take a shared (read) lock
  -o, --close              fork; the command does not inherit the lock, and
                           bufferlock releases it when the command exits
  -F, --no-fork            accepted for flock(1) compatibility (exec is the default)

Messages:
  -v, --verbose            say when the lock was taken, and who holds a busy one
  -q, --quiet              no warnings (errors are still printed)
  -h, --help               show this help
  -V, --version            show the version

Exit status: the command's (128+N if killed by signal N); 75 busy; 69 error;
64 usage; 126 command not executable; 127 command not found.

Examples:
  # crontab: skip tonight's report if yesterday's still runs
  0 2 * * * bufferlock nightly-report -- /usr/local/bin/report
  # wait up to 30 s for another build of the same tree
  bufferlock -w 30 "build:$PWD" -- make -j4
)";
}

std::string_view version_text() {
  return "bufferlock " BUFFERLOCK_VERSION "\n"
         "backends: file\n";
}

} // namespace bufferlock
