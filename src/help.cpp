#include "help.hpp"

#include <fmt/format.h>
#include <hiredis/hiredis.h>

#ifndef BUFFERLOCK_VERSION
#error "BUFFERLOCK_VERSION must be defined by the build"
#endif

namespace bufferlock {

std::string_view help_text() {
  return R"HELP(Usage:
  bufferlock [OPTIONS] KEY [--] COMMAND [ARG...]   run COMMAND under the lock for KEY
  bufferlock [OPTIONS] KEY -c 'SHELL COMMAND'      the same through /bin/sh -c
  bufferlock run [OPTIONS] KEY [--] COMMAND...     explicit form (for a KEY named like a subcommand)
  bufferlock cache [OPTIONS] KEY [--] COMMAND...   build COMMAND's output once, serve it to everyone
  bufferlock status [OPTIONS] KEY                  print "free", or "held" and what is known of the holder
  bufferlock acquire [OPTIONS] KEY                 redis: take the lock, print its token
  bufferlock release [OPTIONS] KEY TOKEN           redis: release the lock held with TOKEN
  bufferlock extend [OPTIONS] KEY TOKEN            redis: reset the TTL of the lock held with TOKEN
  bufferlock --help | --version | --list-messages

Takes a named lock for KEY, then runs COMMAND, or skips it when someone else
holds the lock, and says which by its exit status. Options come before KEY;
everything after KEY is the command, verbatim.

Backend:
  -d, --dir DIR            file locks in DIR (env BUFFERLOCK_DIR; default
                           $XDG_RUNTIME_DIR/bufferlock, else /tmp/bufferlock-UID)
  -r, --redis URL          a Redis server shared by many machines (env BUFFERLOCK_REDIS):
                           redis://[[USER]:PASSWORD@]HOST[:PORT][/DB], unix:///PATH[?db=N];
                           password also from BUFFERLOCK_REDIS_PASSWORD or REDISCLI_AUTH

Waiting:
  -n, --nonblock           try once; if busy, skip the command (the default)
  -w, --wait, --timeout SECONDS
                           wait up to SECONDS (5, 0.25, 250ms, 2m, inf; 0 = -n;
                           env BUFFERLOCK_WAIT; cache: default inf)

Exit codes:
  -E, --busy-exit, --conflict-exit-code N
                           status when busy or the wait ran out (default 75)
      --error-exit N       status when the lock could not be taken (default 69)
      --fail-open          on a lock error, warn and run the command anyway

Running:
  -c, --command STRING     run STRING with /bin/sh -c
  -s, --shared             file: take a shared (read) lock
  -o, --close              fork; the command does not inherit the lock, and
                           bufferlock releases it when the command exits (redis: always)
  -F, --no-fork            accepted for flock(1) compatibility (exec is the default)

Redis:
      --ttl SECONDS        lock lifetime, renewed every TTL/3 while the command runs
                           (default 60; env BUFFERLOCK_TTL)
      --namespace PREFIX   key prefix (default buffer:lock:; env BUFFERLOCK_NAMESPACE)
      --hash-tag           key {PREFIX}MD5: every lock in one Redis Cluster slot
      --connect-timeout SECONDS
                           connect timeout (default 1; env BUFFERLOCK_CONNECT_TIMEOUT)
      --io-timeout SECONDS timeout of each command (default 1; env BUFFERLOCK_IO_TIMEOUT)
      --step SECONDS       first pause between tries while waiting (default 0.001)
      --ratio N            growth of the pause (default 2)
      --max-step SECONDS   longest pause (default 0.5)
      --on-lost warn|term  when renewal finds the lock lost: warn, or also SIGTERM
                           the command (default warn; env BUFFERLOCK_ON_LOST)
      --kill-after SECONDS after term: SIGKILL if still running (default 10;
                           env BUFFERLOCK_KILL_AFTER)

Cache (bufferlock cache --help for more):
      --cache-dir DIR      where entries live (env BUFFERLOCK_CACHE_DIR; default
                           $XDG_CACHE_HOME/bufferlock, else ~/.cache/bufferlock)
      --max-age SECONDS    entries older than this are rebuilt (default: never)
      --stale SECONDS      serve an entry expired by up to SECONDS while another rebuilds
      --background         with --stale: rebuild in a detached process, never wait
      --stale-if-error     serve the expired entry when the rebuild fails
      --drop               remove KEY's entry
      --gc                 remove expired and corrupt entries and abandoned temporary files

Messages:
  -v, --verbose            say when the lock was taken, and who holds a busy one
  -q, --quiet              no warnings (errors are still printed)
      --messages FILE      message texts from FILE, lines "key = text" (env BUFFERLOCK_MESSAGES)
      --list-messages      print every message key with its default text
  -h, --help               show this help
  -V, --version            show the version, backends and libraries

Exit status: the command's (128+N if killed by signal N); 75 busy; 69 error;
64 usage; 126 command not executable; 127 command not found.

Examples:
  # crontab: skip tonight's report if yesterday's still runs
  0 2 * * * bufferlock nightly-report -- /usr/local/bin/report
  # CI on many machines: one deployment at a time, waiting up to 10 minutes
  bufferlock -r redis://ci-redis:6379/0 -w 10m deploy-prod -- ./deploy.sh
)HELP";
}

std::string_view cache_help_text() {
  return R"HELP(Usage:
  bufferlock cache [OPTIONS] KEY [--] COMMAND [ARG...]
  bufferlock cache [--cache-dir DIR] --drop KEY
  bufferlock cache [--cache-dir DIR] [--max-age SECONDS] --gc

Builds COMMAND's standard output once and serves it to every caller: a fresh
entry is printed without running COMMAND; on a miss the first caller takes the
lock for KEY and runs COMMAND (its output reaches stdout as it comes and is
stored), while the others wait for the lock and then print the stored entry.
A failed build stores nothing and exits with the command's status.

Cache:
      --cache-dir DIR      where entries live (env BUFFERLOCK_CACHE_DIR; default
                           $XDG_CACHE_HOME/bufferlock, else ~/.cache/bufferlock);
                           locks in DIR/locks unless --dir or --redis is given
      --max-age SECONDS    entries older than this (from the build's start) are
                           rebuilt (default: entries never expire)
      --stale SECONDS      an entry expired by up to SECONDS is served at once
                           while another caller rebuilds it (needs --max-age)
      --background         with --stale: the caller that would rebuild also serves
                           the stale entry and rebuilds in a detached process
      --stale-if-error     when the rebuild fails, serve the expired entry (exit 0)
      --drop               remove KEY's entry (exit 0 even if there is none)
      --gc                 remove corrupt entries, entries older than --max-age,
                           and temporary files whose builder is gone

Lock options (see bufferlock --help): -d DIR, -r URL and the redis options,
  -w SECONDS (default inf), -n, -E N, --error-exit N, --fail-open, -v, -q.

Examples:
  # a shell prompt segment that costs one process start when cached
  bufferlock cache --max-age 30 --stale 600 --background git-status-$PWD -- git status -sb
  # CI: resolve dependencies once per lock file, whatever the number of jobs
  bufferlock cache "deps-$(sha256sum package-lock.json | cut -c1-16)" -- ./resolve-deps.sh
)HELP";
}

std::string version_text() {
  return fmt::format("bufferlock {}\n"
                     "backends: file, redis\n"
                     "libraries: hiredis {}.{}.{}, fmt {}.{}.{}\n",
                     BUFFERLOCK_VERSION, HIREDIS_MAJOR, HIREDIS_MINOR, HIREDIS_PATCH, FMT_VERSION / 10000,
                     FMT_VERSION / 100 % 100, FMT_VERSION % 100);
}

} // namespace bufferlock
