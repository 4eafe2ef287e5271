// argv and the environment -> plain option structs, through CLI11. Nothing
// here touches a lock.
#pragma once

#include "argv_scan.hpp"
#include "http/url.hpp"
#include "messages.hpp"
#include "redis/tls.hpp"
#include "redis/url.hpp"
#include "util/backoff.hpp"
#include "util/diag.hpp"
#include "util/duration.hpp"

#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace bufferlock {

enum class Command { run, cache, status, acquire, release, extend, list, help, version, list_messages };
enum class Backend { file, redis };
enum class OnLost { warn, term };
enum class CacheStoreKind { file, redis, http, s3 };

struct RedisSettings {
  RedisUrl url;
  std::optional<std::string> password; // from the URL, BUFFERLOCK_REDIS_PASSWORD or REDISCLI_AUTH
  Nanos ttl = std::chrono::seconds(60);
  std::string key_prefix = "buffer:lock:";
  bool hash_tag = false;
  Nanos connect_timeout = std::chrono::seconds(1);
  Nanos io_timeout = std::chrono::seconds(1);
  Nanos step = std::chrono::milliseconds(1);
  double ratio = 2.0;
  Nanos max_step = std::chrono::milliseconds(500);
  // The waiting back-off, which also paces TRYAGAIN retries (SPEC §13).
  Backoff backoff() const { return {step, ratio, max_step}; }
  // How long an infinite wait retries a server that has not answered once
  // in this run (a typo in a port): then the wait ends with the error (SPEC §7).
  Nanos outage_allowance = std::chrono::seconds(30);
  OnLost on_lost = OnLost::warn;
  Nanos kill_after = std::chrono::seconds(10);
  // The timeouts of a renewal attempt and of the release, once the lock is
  // held: connect_timeout and io_timeout unless --on-lost term shortened
  // the defaulted ones to fit the lease into the TTL (SPEC §7, fit_lease).
  std::optional<Nanos> renew_connect_timeout, renew_io_timeout;
  Nanos renew_connect() const { return renew_connect_timeout.value_or(connect_timeout); }
  Nanos renew_io() const { return renew_io_timeout.value_or(io_timeout); }
  TlsFiles tls; // rediss:// only
  // --redis given N > 1 times: N independent masters, each URL with its
  // password (SPEC §13); `url` is the first of them.
  std::vector<RedisUrl> quorum;

  bool operator==(const RedisSettings&) const = default;
};

struct CacheSettings {
  std::string dir;                             // empty: BUFFERLOCK_CACHE_DIR, XDG_CACHE_HOME, ~/.cache
  std::optional<Nanos> max_age;                // entries older than this are misses
  std::optional<Nanos> stale;                  // ... but served while someone rebuilds, this much longer
  bool background = false;                     // the caller that rebuilds serves stale and rebuilds detached
  bool stale_if_error = false;                 // a failed rebuild serves the old entry
  bool drop = false;                           // --drop KEY
  bool gc = false;                             // --gc
  bool list = false;                           // --list
  bool force = false;                          // rebuild even when fresh
  bool read_only = false;                      // --read-only: serve, never write the store
  bool keep_stderr = false;                    // store stderr too, replay it on hits
  std::vector<std::string> depends;            // --depends PATH...
  std::vector<std::string> excludes;           // --exclude PATTERN...: left out of --depends directories
  std::vector<std::string> outputs;            // --output PATH...: files the build makes
  std::string sign_key;                        // --sign-key FILE (BUFFERLOCK_SIGN_KEY); empty: unsigned
  bool compress = false;                       // --compress: zstd in the file store (Redis: always)
  CacheStoreKind store = CacheStoreKind::file; // --store (BUFFERLOCK_CACHE_STORE)
  StoreUrl store_url;                            // --store http(s)://...
  std::string store_s3;                          // --store s3://BUCKET/PREFIX, as given
  std::string store_token_file;                  // --store-token-file (BUFFERLOCK_STORE_TOKEN_FILE)
  Nanos store_timeout = std::chrono::seconds(10); // --store-timeout: connect, and any stall
  std::uint64_t max_entry = 64ull * 1024 * 1024; // larger outputs are not stored (the default: Redis only)
  bool max_entry_given = false;                  // the file and http stores have a limit only when given
  std::optional<std::uint64_t> max_size;         // --gc: trim the store to this many bytes

  bool operator==(const CacheSettings&) const = default;
};

struct Options {
  Command command = Command::run;
  Backend backend = Backend::file;
  std::string dir;     // file backend: lock directory; empty = the default one
  RedisSettings redis; // redis backend
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

// Looks up an environment variable; nullptr when unset.
using EnvLookup = std::function<const char*(const char*)>;

// Which options CLI11 is given for a parse: those that argv names before KEY
// (found by the pre-scan), or every one the subcommand accepts (tests compare).
enum class Declare { named, every };

// Parses argv (argv[0] is the program) and the environment variables the
// chosen backend reads. Throws UsageError with the message text.
Options parse_command_line(int argc, const char* const* argv, const EnvLookup& getenv,
                           Declare declare = Declare::named);

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
