// argv and the environment -> plain option structs, through CLI11. Nothing
// here touches a lock.
#pragma once

#include "argv_scan.hpp"
#include "cache/recipe.hpp"
#include "cache/settings.hpp"
#include "lock/acquire.hpp"
#include "lock/settings.hpp"
#include "messages.hpp"
#include "util/diag.hpp"
#include "util/duration.hpp"

#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace bufferlock {

enum class Command { run, cache, status, acquire, release, extend, list, help, version, list_messages };

struct Options {
  Command command = Command::run;
  Backend backend = Backend::file;
  std::string dir;     // file backend: lock directory; empty = the default one
  RedisLockSettings redis; // redis backend
  CacheSettings cache;
  Nanos wait{0}; // 0 = try once; infinite_duration = forever
  int busy_exit = 75;
  int error_exit = 69;
  bool fail_open = false;
  bool shared = false;
  unsigned slots = 1;            // --slots N: a counting semaphore of N holders
  bool slots_given = false;      // --slots or BUFFERLOCK_SLOTS: the command gets BUFFERLOCK_SLOT
  std::vector<std::string> also; // --also KEY2...: taken with KEY, all or nothing
  bool close = false;            // --close: fork, the command does not inherit the lock
  diag::Verbosity verbosity = diag::Verbosity::normal;
  bool json = false; // --json: status, list and cache --list print one JSON document
  std::string key;
  std::vector<std::string> argv;     // the command; for -c, {"/bin/sh", "-c", STRING}
  std::string token;                 // release / extend
  std::string messages_file;         // --messages (else BUFFERLOCK_MESSAGES)
  Command help_topic = Command::run; // the subcommand whose --help was asked

  bool operator==(const Options&) const = default;
};

// A bad command line or environment: printed as one line, exit status 64.
// It keeps the message key and values, so that the top level can print it in
// the texts of a --messages file named before the error (messages_file).
class UsageError : public std::runtime_error {
public:
  UsageError(Msg m, MessageArgs values, std::string file)
      : std::runtime_error(message(m, values)), msg(m), args(std::move(values)),
        messages_file(std::move(file)) {}
  Msg msg;
  MessageArgs args;
  std::string messages_file;
};

// Looks up an environment variable (nullptr when unset). `ours`, when
// given, holds every variable of bufferlock's own that is set
// ("BUFFERLOCK_...=value" entries, found in one pass over environ): the
// option table's variables are then matched against those few rather than
// asked one by one.
struct EnvLookup {
  template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, EnvLookup>>>
  EnvLookup(F lookup, const std::vector<const char*>* ours_set = nullptr)
      : get(std::move(lookup)), ours(ours_set) {}
  const char* operator()(const char* name) const { return get(name); }

  std::function<const char*(const char*)> get;
  const std::vector<const char*>* ours;
};

// Which options CLI11 is given for a parse: those that argv names before KEY
// (found by the pre-scan), or every one the subcommand accepts (tests compare).
enum class Declare { named, every };

// Parses argv (argv[0] is the program) and the environment variables the
// chosen backend reads. Throws UsageError with the message text.
Options parse_command_line(int argc, const char* const* argv, const EnvLookup& getenv,
                           Declare declare = Declare::named);

// The lock that the subcommand of `o` takes, and how: --fail-open only where
// a command is run, the wait line of a build for `cache`.
LockRequest lock_request(const Options& o);

// What `bufferlock cache` is asked (o.command is cache), taken from `o`.
CacheRequest cache_request(Options&& o);

// For tests of the pre-scan: every option `command` accepts, by CLI11's
// names ("-w,--wait,--timeout") and whether it takes a value.
std::vector<ScanOption> accepted_options(Command command);

// For tests of the pre-scan: the options (by CLI11's names) that a parse of
// argv declares to CLI11.
std::vector<std::string_view> options_declared(int argc, const char* const* argv);

// The --help text of `topic` (cache, or run for every other), made from the
// same option declarations as the parser.
std::string help_text(Command topic);

// Whether `word` names a subcommand (so an implicit KEY cannot be spelled so).
bool is_subcommand(std::string_view word);
// The subcommand that `key` is one typing slip away from ("cach"), if any:
// said when KEY's command cannot be found.
std::string_view subcommand_near(std::string_view key);

} // namespace bufferlock
