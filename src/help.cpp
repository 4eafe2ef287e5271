#include "help.hpp"

#include "http/client.hpp"
#include "redis/tls.hpp"

#include <CLI/Version.hpp>
#include <fmt/format.h>
#include <hiredis/hiredis.h>

#ifndef BUFFERLOCK_VERSION
#error "BUFFERLOCK_VERSION must be defined by the build"
#endif

namespace bufferlock {

std::string_view help_prose(Command topic, HelpPart part) {
  if (topic == Command::cache) {
    if (part == HelpPart::intro)
      return R"HELP(Usage:
  bufferlock cache [OPTIONS] KEY [--] COMMAND [ARG...]
  bufferlock cache [--cache-dir DIR] [--store STORE] [-r URL] --drop KEY
  bufferlock cache [--cache-dir DIR] [--store STORE] [-r URL] [--max-age SECONDS]
                   [--max-size SIZE] --gc
  bufferlock cache [--cache-dir DIR] [--store STORE] [-r URL] [--json] --list

Builds COMMAND's standard output once and serves it to every caller: a fresh
entry is printed without running COMMAND; on a miss the first caller takes the
lock for KEY and runs COMMAND (its output reaches stdout as it comes and is
stored), while the others wait for the lock and then print the stored entry.
A failed build stores nothing and exits with the command's status.
)HELP";
    return R"HELP(
Lock options (see bufferlock --help): -d DIR, -r URL and the redis options,
  -w SECONDS (default inf), -n, -E N, --error-exit N, --fail-open, -v, -q.
  Without -d or -r, the locks live in the cache directory's "locks".

Examples:
  # a shell prompt segment that costs one process start when cached
  bufferlock cache --max-age 30 --stale 600 --background git-status-$PWD -- git status -sb
  # CI: resolve dependencies once per lock file content, whatever the number of jobs
  bufferlock cache --depends package-lock.json deps -- ./resolve-deps.sh
  # CI runners that share a Redis but no disk: one build per input state, every
  # runner served (by content: fresh clones and other branches' entries hit)
  bufferlock cache --store redis -r redis://ci-redis:6379/0 --max-age 24h \
      --depends Cargo.lock --depends src --keep-stderr build -- ./build.sh
  # cron keeps a report warm; callers never wait for it
  */5 * * * * bufferlock cache --force --max-age 10m report -- ./report.sh
)HELP";
  }
  if (part == HelpPart::intro)
    return R"HELP(Usage:
  bufferlock [OPTIONS] KEY [--] COMMAND [ARG...]   run COMMAND under the lock for KEY
  bufferlock [OPTIONS] KEY -c 'SHELL COMMAND'      the same through /bin/sh -c
  bufferlock run [OPTIONS] KEY [--] COMMAND...     explicit form (for a KEY named like a subcommand)
  bufferlock cache [OPTIONS] KEY [--] COMMAND...   build COMMAND's output once, serve it to everyone
  bufferlock status [OPTIONS] KEY                  print "free", or "held" and what is known of the holder
  bufferlock acquire [OPTIONS] KEY                 redis: take the lock, print its token
  bufferlock release [OPTIONS] KEY TOKEN           redis: release the lock held with TOKEN
  bufferlock extend [OPTIONS] KEY TOKEN            redis: reset the TTL of the lock held with TOKEN
  bufferlock list [OPTIONS]                        every lock held now, its KEY and holder
  bufferlock --help | --version | --list-messages

Takes a named lock for KEY, then runs COMMAND, or skips it when someone else
holds the lock, and says which by its exit status. Options come before KEY;
everything after KEY is the command, verbatim.
)HELP";
  return R"HELP(
Exit status: the command's (128+N if killed by signal N); 75 busy; 69 error;
64 usage; 126 command not executable; 127 command not found.

Examples:
  # crontab: skip tonight's report if yesterday's still runs
  0 2 * * * bufferlock nightly-report -- /usr/local/bin/report
  # CI on many machines: one deployment at a time, waiting up to 10 minutes
  bufferlock -r redis://ci-redis:6379/0 -w 10m deploy-prod -- ./deploy.sh
  # at most 3 test jobs at once on this machine
  bufferlock --slots 3 -w inf e2e-tests -- make e2e
)HELP";
}

std::string version_text() {
  return fmt::format("bufferlock {}\n"
                     "backends: file, redis\n"
                     "libraries: hiredis {}.{}.{}, fmt {}.{}.{}, CLI11 {}\n"
                     "tls (rediss://): {}\n"
                     "cache --store http(s)://: {}\n",
                     BUFFERLOCK_VERSION, HIREDIS_MAJOR, HIREDIS_MINOR, HIREDIS_PATCH, FMT_VERSION / 10000,
                     FMT_VERSION / 100 % 100, FMT_VERSION % 100, CLI11_VERSION, tls_library_version(), http_library_version());
}

} // namespace bufferlock
