// The command line through CLI11 (SPEC §2-4). Each option is declared once,
// in `option_table`; the parser of a run and the --help texts are both built
// from it. What CLI11 cannot say is checked here after it parsed: where KEY
// is, the command after it, backend scoping and the environment fallbacks.
//
// CLI11 2.1.2 traps designed around (DEPS.md), each pinned by a unit test:
// - no positionals are declared: with prefix_command() the first word that
//   is not an option (KEY) and every word after it come back verbatim from
//   remaining(), so the command's own flags (even -c) are never parsed;
// - no envname() on the parsing App: CLI11 would read the variables itself
//   (the other backend's too) and count them as "given"; the environment is
//   applied below, only where the command line said nothing;
// - every CLI::ParseError becomes one of our messages with exit status 64;
// - values are checked by our own functions, whose messages name the option.
// Start-up: CLI11 pays ~15-20k instructions per declared option, so it is
// given only the options that argv names before KEY, found by a pre-scan
// (argv_scan.hpp) from this table's names and arities (ARCHITECTURE.md).
#include "cli.hpp"

#include "argv_scan.hpp"
#include "cache/depends.hpp"
#include "cache/exclude.hpp"
#include "cache/open_store.hpp"
#include "redis/url.hpp"
#include "help.hpp"
#include "lock/lease.hpp"
#include "messages.hpp"
#include "util/packed_strings.hpp"
#include "util/size.hpp"

#include <CLI/App.hpp>
#include <CLI/Config.hpp> // ConfigBase's members: App's constructor needs them
#include <CLI/Formatter.hpp>

#include <algorithm>
#include <array>
#include <optional>
#include <span>

namespace bufferlock {

namespace {

enum class Opt {
  dir,
  redis,
  nonblock,
  wait,
  busy_exit,
  error_exit,
  fail_open,
  shared,
  slots,
  also,
  close,
  no_fork,
  shell_command,
  verbose,
  quiet,
  json,
  help,
  version,
  messages,
  list_messages,
  // redis only
  ttl,
  key_prefix,
  hash_tag,
  connect_timeout,
  io_timeout,
  step,
  ratio,
  max_step,
  outage_allowance,
  on_lost,
  kill_after,
  // rediss:// only
  tls_ca,
  tls_cert,
  tls_key,
  // cache only
  cache_dir,
  max_age,
  stale,
  background,
  stale_if_error,
  drop,
  gc,
  depends,
  exclude,
  output,
  warm,
  warm_from,
  keep_stderr,
  explain,
  sign_key,
  compress,
  force,
  read_only,
  store,
  store_token_file,
  store_timeout,
  max_entry,
  max_size,
  max_unused,
  stats,
  zero,
  format,
  list,
};

// What an option belongs to, which says where it is accepted and where its
// variable is read: anything; the choice of backend (a variable only where
// the command line chose none); the lock's wait and slots (read where a
// backend is used); the redis backend (refused with the file backend; tls:
// with a plain redis:// URL too); TLS of Redis or of an https/s3 store
// (tls_or_store: a redis option, but in `cache` a store's too); `cache`
// alone; or the http store alone (refused with another store).
enum class Scope { any, backend, lock, redis, tls, tls_or_store, cache, http, objects };

// The subcommands that take an option, a bit for each Command; given to
// another, it is refused (usage_option_not_here).
using Commands = unsigned;
constexpr Commands command_bit(Command c) { return 1u << static_cast<unsigned>(c); }
constexpr Commands subcommands_of_a_key = command_bit(Command::run) | command_bit(Command::cache) |
                                          command_bit(Command::status) | command_bit(Command::acquire) |
                                          command_bit(Command::release) | command_bit(Command::extend) |
                                          command_bit(Command::list);
constexpr Commands every_command = subcommands_of_a_key | command_bit(Command::help) |
                                   command_bit(Command::version) | command_bit(Command::list_messages);

// One option, declared once: CLI11 gets the names, the help texts the rest.
struct OptionDecl {
  Opt id;
  std::string_view names;      // CLI11's form: "-w,--wait,--timeout"
  std::string_view value_name; // empty: a flag
  std::string_view group;      // the --help section
  std::string_view description;
  std::string_view default_text; // for --help; empty: none shown
  std::string_view env;          // the variable that stands in for it; empty: none
  Scope scope;
  Commands commands = subcommands_of_a_key;
};

constexpr std::string_view g_backend = "Backend";
constexpr std::string_view g_waiting = "Waiting";
constexpr std::string_view g_exit = "Exit codes";
constexpr std::string_view g_running = "Running";
constexpr std::string_view g_keys = "Slots and several keys";
constexpr std::string_view g_redis = "Redis";
constexpr std::string_view g_tls = "TLS (rediss://)";
constexpr std::string_view g_cache = "Cache";
constexpr std::string_view g_output = "Output"; // in both help texts: cache --list has it too
constexpr std::string_view g_messages = "Messages";

// In --help order. Names accepted but not shown: see hidden_names.
constexpr std::array<OptionDecl, 62> option_source = {{
    {Opt::dir, "-d,--dir", "DIR", g_backend, "file locks in DIR",
     "/run/lock/bufferlock-UID, else /tmp/bufferlock-UID", "BUFFERLOCK_DIR", Scope::backend},
    {Opt::redis, "-r,--redis", "URL", g_backend,
     "a Redis server shared by many machines: redis://[[USER]:PASSWORD@]HOST[:PORT][/DB], "
     "rediss://... (the same over TLS), unix:///PATH[?db=N], "
     "redis-sentinel://HOST[:PORT][,HOST[:PORT]...][/DB]#MASTER; give it N times for a quorum "
     "of N masters; password also from BUFFERLOCK_REDIS_PASSWORD or REDISCLI_AUTH",
     "", "BUFFERLOCK_REDIS", Scope::backend},
    {Opt::nonblock, "-n,--nonblock,--nb", "", g_waiting, "try once; if busy, skip the command (the default)",
     "", "", Scope::any},
    {Opt::wait, "-w,--wait,--timeout", "SECONDS", g_waiting,
     "wait up to SECONDS (5, 0.25, 250ms, 2m, inf; 0 = -n)", "0; cache: inf", "BUFFERLOCK_WAIT", Scope::lock},
    {Opt::busy_exit, "-E,--busy-exit,--conflict-exit-code", "N", g_exit,
     "status when busy or the wait ran out", "75", "", Scope::any},
    {Opt::error_exit, "--error-exit", "N", g_exit, "status when the lock could not be taken", "69", "",
     Scope::any},
    {Opt::fail_open, "--fail-open", "", g_exit, "on a lock error, warn and run the command anyway", "", "",
     Scope::any},
    {Opt::shell_command, "-c,--command", "STRING", g_running, "run STRING with /bin/sh -c", "", "",
     Scope::any},
    {Opt::shared, "-s,--shared", "", g_running, "file: take a shared (read) lock", "", "", Scope::any},
    {Opt::slots, "--slots", "N", g_keys,
     "up to N holders at once (1-1000; every caller of KEY must give the same N); the command gets "
     "BUFFERLOCK_SLOT",
     "1", "BUFFERLOCK_SLOTS", Scope::lock,
     command_bit(Command::run) | command_bit(Command::cache) | command_bit(Command::status)},
    {Opt::also, "--also", "KEY2", g_keys,
     "take KEY2 as well, all or nothing, in a fixed order (repeatable; the --wait covers them all)", "", "",
     Scope::any, command_bit(Command::run) | command_bit(Command::cache)},
    {Opt::close, "-o,--close", "", g_running,
     "fork; the command does not inherit the lock, and bufferlock releases it when the command exits "
     "(redis: always)",
     "", "", Scope::any},
    {Opt::no_fork, "-F,--no-fork", "", g_running, "accepted for flock(1) compatibility (exec is the default)",
     "", "", Scope::any},
    {Opt::ttl, "--ttl", "SECONDS", g_redis, "lock lifetime, renewed every TTL/3 while the command runs", "60",
     "BUFFERLOCK_TTL", Scope::redis},
    {Opt::key_prefix, "--namespace", "PREFIX", g_redis, "key prefix", "buffer:lock:", "BUFFERLOCK_NAMESPACE",
     Scope::redis},
    {Opt::hash_tag, "--hash-tag", "", g_redis, "key {PREFIX}MD5: every lock in one Redis Cluster slot", "",
     "", Scope::redis},
    {Opt::connect_timeout, "--connect-timeout", "SECONDS", g_redis, "connect timeout", "1",
     "BUFFERLOCK_CONNECT_TIMEOUT", Scope::redis},
    {Opt::io_timeout, "--io-timeout", "SECONDS", g_redis, "timeout of each command", "1",
     "BUFFERLOCK_IO_TIMEOUT", Scope::redis},
    {Opt::step, "--step", "SECONDS", g_redis, "first pause between tries while waiting", "0.001", "",
     Scope::redis},
    {Opt::ratio, "--ratio", "N", g_redis, "growth of the pause", "2", "", Scope::redis},
    {Opt::max_step, "--max-step", "SECONDS", g_redis, "longest pause", "0.5", "", Scope::redis},
    {Opt::outage_allowance, "--outage-allowance", "SECONDS", g_redis,
     "how long --wait inf retries a Redis that has not answered once in this run (inf: for ever)", "30",
     "BUFFERLOCK_OUTAGE_ALLOWANCE", Scope::redis},
    {Opt::on_lost, "--on-lost", "warn|term", g_redis,
     "when renewal finds the lock lost: warn, or also SIGTERM the command", "warn", "BUFFERLOCK_ON_LOST",
     Scope::redis},
    {Opt::kill_after, "--kill-after", "SECONDS", g_redis,
     "after term: SIGKILL this long after the SIGTERM (shortened to fit the TTL)", "10",
     "BUFFERLOCK_KILL_AFTER", Scope::redis},
    {Opt::tls_ca, "--tls-ca", "FILE", g_tls, "trust the CA certificates in FILE (PEM)", "the system's",
     "BUFFERLOCK_TLS_CA", Scope::tls_or_store},
    {Opt::tls_cert, "--tls-cert", "FILE", g_tls, "client certificate (PEM) for mutual TLS; needs --tls-key",
     "", "BUFFERLOCK_TLS_CERT", Scope::tls},
    {Opt::tls_key, "--tls-key", "FILE", g_tls, "the private key (PEM) of --tls-cert", "",
     "BUFFERLOCK_TLS_KEY", Scope::tls},
    {Opt::cache_dir, "--cache-dir", "DIR", g_cache, "where entries live",
     "$XDG_CACHE_HOME/bufferlock, else ~/.cache/bufferlock", "BUFFERLOCK_CACHE_DIR", Scope::cache},
    {Opt::max_age, "--max-age", "SECONDS", g_cache,
     "entries older than this (from the build's start) are rebuilt", "none: entries never expire", "",
     Scope::cache},
    {Opt::stale, "--stale", "SECONDS", g_cache,
     "an entry expired by up to SECONDS is served at once while another caller rebuilds it (needs --max-age)",
     "", "", Scope::cache},
    {Opt::background, "--background", "", g_cache,
     "with --stale: the caller that would rebuild also serves the stale entry and rebuilds in a detached "
     "process",
     "", "", Scope::cache},
    {Opt::stale_if_error, "--stale-if-error", "", g_cache,
     "when the rebuild fails, serve the expired entry (exit 0)", "", "", Scope::cache},
    {Opt::depends, "--depends", "PATH", g_cache,
     "the entry also depends on what PATH holds (a file's bytes, a directory's tree, or that it is "
     "missing): one entry per input state (repeatable)",
     "", "", Scope::cache},
    {Opt::exclude, "--exclude", "PATTERN", g_cache,
     "leave out of each --depends directory the paths PATTERN matches, gitignore-style: *.o, build/, "
     "**/node_modules, /top (repeatable; .git and --output PATHs are always left out)",
     "", "", Scope::cache},
    {Opt::output, "--output", "PATH", g_cache,
     "after a successful build, store the file or directory PATH with the entry; hits put it in place "
     "(repeatable)",
     "", "", Scope::cache},
    {Opt::warm, "--warm", "", g_cache,
     "on a miss, the builder first puts in place the --output PATHs of KEY's newest entry for any inputs, "
     "and builds over them",
     "", "", Scope::cache},
    {Opt::warm_from, "--warm-from", "KEY", g_cache,
     "--warm, and when KEY has no entry, start from the newest entry of this KEY (repeatable: the first "
     "that has one)",
     "", "", Scope::cache},
    {Opt::keep_stderr, "--keep-stderr", "", g_cache, "store the build's stderr too; hits replay it on stderr",
     "", "", Scope::cache},
    {Opt::explain, "--explain", "", g_cache,
     "say on stderr why a miss missed (no entry, expired, which --depends files differ, other --output "
     "list), and the age and host of a hit's entry (-v says it of misses too)",
     "", "BUFFERLOCK_CACHE_EXPLAIN", Scope::cache},
    {Opt::sign_key, "--sign-key", "FILE", g_cache,
     "sign every entry written with an HMAC-SHA256 keyed by FILE's bytes, and serve only entries whose "
     "signature checks (FILE: its owner's alone)",
     "", "BUFFERLOCK_SIGN_KEY", Scope::cache},
    {Opt::compress, "--compress", "", g_cache,
     "file store: store stdout and stderr compressed with zstd (the Redis store always does)", "", "",
     Scope::cache},
    {Opt::force, "--force", "", g_cache,
     "rebuild now, under the lock, even when the entry is fresh (others are served meanwhile)", "", "",
     Scope::cache},
    {Opt::read_only, "--read-only", "", g_cache,
     "serve hits, write nothing to the store: a miss waits for a build in progress, else runs the command "
     "without the lock and stores nothing",
     "", "BUFFERLOCK_CACHE_READ_ONLY", Scope::cache},
    {Opt::store, "--store", "file|redis|URL", g_cache,
     "where entries live: the cache directory, the Redis server, an HTTP server (http[s]://HOST[:PORT]/PATH, "
     "PUT, GET, DELETE; PROPFIND to list), or an S3 bucket (s3://BUCKET/PREFIX)",
     "file", "BUFFERLOCK_CACHE_STORE", Scope::cache},
    {Opt::store_token_file, "--store-token-file", "FILE", g_cache,
     "http store: send FILE's token as \"Authorization: Bearer\" (FILE: its owner's alone)", "",
     "BUFFERLOCK_STORE_TOKEN_FILE", Scope::http},
    {Opt::store_timeout, "--store-timeout", "SECONDS", g_cache,
     "http and s3 stores: give up a request that cannot connect, or moves no byte, for SECONDS", "10",
     "BUFFERLOCK_STORE_TIMEOUT", Scope::objects},
    {Opt::max_entry, "--max-entry", "SIZE", g_cache,
     "every store: a larger output is served but not stored (suffix K, M or G)",
     "redis: 64M; file, http: none", "", Scope::cache},
    {Opt::list, "--list", "", g_cache,
     "print age (s), size, inputs and key of every entry, newest first (with --json: as JSON)", "", "",
     Scope::cache},
    {Opt::drop, "--drop", "", g_cache, "remove KEY's entries, for any inputs (exit 0 even if there is none)",
     "", "", Scope::cache},
    {Opt::gc, "--gc", "", g_cache,
     "remove corrupt entries, entries older than --max-age, and temporary files whose builder is gone", "",
     "", Scope::cache},
    {Opt::max_size, "--max-size", "SIZE", g_cache,
     "with --gc: then remove the least recently used entries until the store is under SIZE "
     "(suffix K, M or G)",
     "", "", Scope::cache},
    {Opt::max_unused, "--max-unused", "SECONDS", g_cache,
     "with --gc: remove entries not used (hit or built) for SECONDS", "", "", Scope::cache},
    {Opt::stats, "--stats", "", g_cache,
     "print what the cache did in this store: its counters, and the keys that saved most", "", "",
     Scope::cache},
    {Opt::zero, "--zero", "", g_cache, "with --stats: reset the counters (prints nothing)", "", "",
     Scope::cache},
    {Opt::format, "--format", "text|json|markdown|prometheus", g_output,
     "cache --stats: the report's format (--json: json)", "text", "", Scope::cache},
    {Opt::json, "-J,--json", "", g_output,
     "status, list and cache --list: print one JSON document (the man page gives its fields)", "", "",
     Scope::any, command_bit(Command::status) | command_bit(Command::list) | command_bit(Command::cache)},
    {Opt::verbose, "-v,--verbose", "", g_messages, "say when the lock was taken, and who holds a busy one",
     "", "", Scope::any},
    {Opt::quiet, "-q,--quiet", "", g_messages, "no warnings (errors are still printed)", "", "", Scope::any},
    {Opt::messages, "--messages", "FILE", g_messages, "message texts from FILE, lines \"key = text\"", "",
     "BUFFERLOCK_MESSAGES", Scope::any, every_command},
    {Opt::list_messages, "--list-messages", "", g_messages, "print every message key with its default text",
     "", "", Scope::any},
    {Opt::help, "-h,--help", "", g_messages, "show this help", "", "", Scope::any},
    {Opt::version, "-V,--version", "", g_messages, "show the version, backends and libraries", "", "",
     Scope::any},
}};

// The table as a run reads it: packed (util/packed_strings.hpp), so that its
// strings cost the start no relocation; option_source is read at compile
// time only.
constexpr auto decl_strings = [](const OptionDecl& d) {
  return std::array{d.names, d.value_name, d.group, d.description, d.default_text, d.env};
};
constexpr std::size_t option_chars = packed_chars(option_source, decl_strings);
constexpr auto option_strings = pack_strings<option_chars>(option_source, decl_strings);
struct DeclRest {
  Opt id;
  Scope scope;
  Commands commands;
};
constexpr std::array<DeclRest, option_source.size()> make_option_rest() {
  std::array<DeclRest, option_source.size()> at{};
  for (std::size_t i = 0; i < option_source.size(); ++i)
    at[i] = DeclRest{option_source[i].id, option_source[i].scope, option_source[i].commands};
  return at;
}
constexpr std::array<DeclRest, option_source.size()> option_rest = make_option_rest();

// The declaration at `i`, by value; its strings are NUL-terminated.
OptionDecl option_at(std::size_t i) {
  const auto& s = option_strings;
  const DeclRest& r = option_rest[i];
  return {r.id, s.get(i, 0), s.get(i, 1), s.get(i, 2), s.get(i, 3), s.get(i, 4), s.get(i, 5), r.scope, r.commands};
}
// What every run's loops over the table read, without the whole declaration.
std::string_view names_at(std::size_t i) { return option_strings.get(i, 0); }
bool takes_value_at(std::size_t i) { return option_strings.get(i, 1).size() != 0; }
std::string_view env_at(std::size_t i) { return option_strings.get(i, 5); }

// The packed table, read like the array it was: by index or in order.
struct OptionTable {
  struct Iterator {
    std::size_t i;
    OptionDecl operator*() const { return option_at(i); }
    Iterator& operator++() {
      ++i;
      return *this;
    }
    bool operator!=(const Iterator& o) const { return i != o.i; }
  };
  static constexpr std::size_t size() { return option_source.size(); }
  OptionDecl operator[](std::size_t i) const { return option_at(i); }
  Iterator begin() const { return {0}; }
  Iterator end() const { return {size()}; }
};
constexpr OptionTable option_table{};

// Long names accepted for compatibility but not advertised in --help.
constexpr std::array<std::string_view, 1> hidden_names = {"nb"};

// In the order of the Command enumerators they stand for.
constexpr std::array<std::string_view, 7> subcommands = {"run",     "cache",  "status", "acquire",
                                                         "release", "extend", "list"};

// The --messages file named so far, for UsageError (see there).
thread_local std::string messages_file_seen;

[[noreturn]] void usage(Msg m, std::initializer_list<Placeholder> values = {}) {
  MessageArgs args;
  for (const auto& p : values)
    args.emplace_back(p.name, p.value);
  throw UsageError(m, std::move(args), messages_file_seen);
}

// The name messages use for an option: its first long name, "--wait".
std::string_view long_name(const OptionDecl& d) {
  const std::size_t at = d.names.find("--");
  const std::size_t end = d.names.find(',', at);
  return d.names.substr(at, end == std::string_view::npos ? end : end - at);
}

// The declaration a typed option word names ("--cache-dir=x", "-w"), if any.
std::optional<OptionDecl> decl_named(std::string_view typed) {
  for (const OptionDecl d : option_table) {
    std::string_view rest = d.names;
    while (!rest.empty()) {
      const std::size_t comma = rest.find(',');
      if (rest.substr(0, comma) == typed) return d;
      rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    }
  }
  return std::nullopt;
}

// Where each option is in the table, by its Opt (every Opt is declared once).
constexpr std::size_t option_count = option_table.size();
constexpr std::array<std::size_t, option_count> make_table_index() {
  std::array<std::size_t, option_count> at{};
  for (std::size_t i = 0; i < option_count; ++i)
    at[static_cast<std::size_t>(option_source[i].id)] = i;
  return at;
}
constexpr std::array<std::size_t, option_count> table_index = make_table_index();
static_assert(static_cast<std::size_t>(Opt::list) + 1 == option_source.size(), "an Opt without a declaration");

std::size_t index_of(Opt id) { return table_index[static_cast<std::size_t>(id)]; }

// The order in which the environment is read: the options that decide
// whether others apply come first, the store (which decides whether `cache
// --list` uses a backend), then the backend's; then the rest, in table order.
constexpr int env_rank(const OptionDecl& d) {
  return d.id == Opt::store ? 0 : d.scope == Scope::backend ? 1 : 2;
}
constexpr std::size_t env_count = std::count_if(option_source.begin(), option_source.end(),
                                                [](const OptionDecl& d) { return !d.env.empty(); });
constexpr std::array<std::size_t, env_count> env_order = [] {
  std::array<std::size_t, env_count> out{};
  std::size_t n = 0;
  for (const int rank : {0, 1, 2})
    for (std::size_t i = 0; i < option_source.size(); ++i)
      if (!option_source[i].env.empty() && env_rank(option_source[i]) == rank) out[n++] = i;
  return out;
}();

// Every variable is one of ours, the prefix that EnvLookup::ours holds.
static_assert(std::all_of(option_source.begin(), option_source.end(), [](const OptionDecl& d) {
  return d.env.empty() || d.env.starts_with("BUFFERLOCK_");
}));

// The declaration of option `id`.
OptionDecl decl_of(Opt id) { return option_table[index_of(id)]; }

// The variable that stands in for option `id`, as the table names it (its
// data() ends with a NUL: see option_at).
const char* env_of(Opt id) { return decl_of(id).env.data(); }

// Options of `cache` alone are unknown to the other subcommands.
bool cache_only(Scope s) { return s == Scope::cache || s == Scope::http || s == Scope::objects; }

bool declared_for(const OptionDecl& d, Command c) { return !cache_only(d.scope) || c == Command::cache; }

// The table as the pre-scan reads it for `command`: an option it does not
// accept has no names (CLI11 leaves it unknown, and it is reported as such).
std::array<ScanOption, option_table.size()> scan_table(Command command) {
  std::array<ScanOption, option_table.size()> shapes;
  for (std::size_t i = 0; i < option_table.size(); ++i)
    if (command == Command::cache || !cache_only(option_rest[i].scope)) shapes[i] = {names_at(i), takes_value_at(i)};
  return shapes;
}

// A duration option's value; `bad` is the message for one that is not.
Nanos duration_value(std::string_view option, std::string_view text, AllowInfinite inf = AllowInfinite::no,
                     Msg bad = Msg::usage_bad_duration) {
  auto d = parse_duration(text, inf);
  if (!d) usage(bad, {{"option", option}, {"value", text}});
  return *d;
}

Nanos positive_duration_value(std::string_view option, std::string_view text) {
  const Nanos d = duration_value(option, text);
  if (d.count() <= 0) usage(Msg::usage_bad_duration, {{"option", option}, {"value", text}});
  return d;
}

// --format's value (cache --stats).
StatsFormat stats_format_value(std::string_view option, std::string_view text) {
  constexpr std::pair<std::string_view, StatsFormat> formats[] = {{"text", StatsFormat::text},
                                                                  {"json", StatsFormat::json},
                                                                  {"markdown", StatsFormat::markdown},
                                                                  {"prometheus", StatsFormat::prometheus}};
  for (const auto& [name, f] : formats)
    if (name == text) return f;
  usage(Msg::usage_bad_format, {{"option", option}, {"value", text}});
}

// A whole number from `lo` to `hi` in plain decimal digits (no sign, no
// space); `bad` is the message for anything else.
unsigned bounded_value(std::string_view option, std::string_view text, unsigned lo, unsigned hi, Msg bad) {
  unsigned v = 0;
  bool ok = !text.empty() && text.size() <= std::to_string(hi).size();
  for (char c : text) {
    if (c < '0' || c > '9')
      ok = false;
    else
      v = v * 10 + static_cast<unsigned>(c - '0');
  }
  if (!ok || v < lo || v > hi) usage(bad, {{"option", option}, {"value", text}});
  return v;
}

unsigned slots_value(std::string_view option, std::string_view text) {
  return bounded_value(option, text, 1, 1000, Msg::usage_bad_slots);
}

int exit_status_value(std::string_view option, std::string_view text) {
  return static_cast<int>(bounded_value(option, text, 0, 255, Msg::usage_bad_exit_status));
}

// Everything the command line says, before the environment fills the gaps.
struct Parsed {
  Options opts;
  std::optional<std::string> dir;
  std::optional<std::string> redis_url; // the first --redis
  std::vector<std::string> redis_urls;  // every --redis: more than one is a quorum
  std::optional<Nanos> wait;
  std::optional<std::string> shell_before_key;
  std::string first_redis_option; // for the "not with the file backend" error
  bool no_fork = false;
  std::optional<std::string> store;              // --store as given
  std::array<bool, option_table.size()> given{}; // on the command line
  std::array<bool, option_table.size()> from_env{}; // by its variable (fill_from_environment)
  std::array<bool, option_table.size()> named{}; // found by the pre-scan: declared to CLI11
};

// BUFFERLOCK_REDIS="URL URL URL": a quorum, as --redis given thrice. Any
// run of blanks separates (a list may be wrapped over lines). It is read
// only when the command line chose no backend, so a BUFFERLOCK_DIR read
// before it is one too.
void redis_urls_from_env(Parsed& p, std::string_view list) {
  if (p.dir) usage(Msg::usage_both_backend_env);
  constexpr std::string_view blanks = " \t\n";
  for (std::size_t i = list.find_first_not_of(blanks); i < list.size();
       i = list.find_first_not_of(blanks, i)) {
    const std::size_t end = std::min(list.find_first_of(blanks, i), list.size());
    p.redis_urls.emplace_back(list.substr(i, end - i));
    i = end;
  }
  if (!p.redis_urls.empty()) p.redis_url = p.redis_urls.front();
}

// Applies one option's value (empty for a flag); `typed` names it in messages
// (the option, or the environment variable that stood in for it).
void apply(Parsed& p, const OptionDecl& decl, std::string_view typed, std::string_view value) {
  Options& o = p.opts;
  const bool from_env = !decl.env.empty() && typed == decl.env;
  (from_env ? p.from_env : p.given)[index_of(decl.id)] = true;
  const bool redis_option = decl.scope == Scope::redis || decl.scope == Scope::tls ||
                            (decl.scope == Scope::tls_or_store && o.command != Command::cache);
  if (redis_option && p.first_redis_option.empty()) p.first_redis_option = typed;
  switch (decl.id) {
  case Opt::dir:
    if (value.empty()) usage(Msg::usage_empty_dir);
    p.dir = std::string(value);
    break;
  case Opt::redis:
    if (from_env) {
      redis_urls_from_env(p, value);
      break;
    }
    if (!p.redis_url) p.redis_url = std::string(value);
    p.redis_urls.emplace_back(value);
    break;
  case Opt::nonblock: // --wait 0, so BUFFERLOCK_WAIT does not stand in for it
    p.wait = Nanos(0);
    p.given[index_of(Opt::wait)] = true;
    break;
  case Opt::wait: p.wait = duration_value(typed, value, AllowInfinite::yes, Msg::usage_bad_wait); break;
  case Opt::busy_exit: o.busy_exit = exit_status_value(typed, value); break;
  case Opt::error_exit: o.error_exit = exit_status_value(typed, value); break;
  case Opt::fail_open: o.fail_open = true; break;
  case Opt::shared: o.shared = true; break;
  case Opt::slots: o.slots = slots_value(typed, value); break;
  case Opt::also: o.also.emplace_back(value); break;
  case Opt::close: o.close = true; break;
  case Opt::no_fork: p.no_fork = true; break;
  case Opt::shell_command: p.shell_before_key = std::string(value); break;
  case Opt::verbose: o.verbosity = diag::Verbosity::verbose; break;
  case Opt::quiet: o.verbosity = diag::Verbosity::quiet; break;
  case Opt::json: o.json = true; break;
  case Opt::help:
    o.help_topic = o.command == Command::help ? o.help_topic : o.command;
    o.command = Command::help;
    break;
  case Opt::version: o.command = Command::version; break;
  case Opt::list_messages: o.command = Command::list_messages; break;
  case Opt::messages:
    if (value.empty()) usage(Msg::usage_missing_value, {{"option", typed}});
    o.messages_file = std::string(value);
    messages_file_seen = o.messages_file;
    break;
  case Opt::ttl: {
    const auto ttl = parse_duration(value, AllowInfinite::no);
    // Redis takes whole milliseconds: round to the nearest, and refuse 0.
    if (!ttl || (ttl->count() + 500'000) / 1'000'000 < 1)
      usage(Msg::redis_ttl_invalid, {{"option", typed}, {"value", value}});
    o.redis.ttl = *ttl;
    break;
  }
  case Opt::key_prefix:
    if (value.empty()) usage(Msg::redis_namespace_invalid, {{"option", typed}});
    o.redis.key_prefix = std::string(value);
    break;
  case Opt::hash_tag: o.redis.hash_tag = true; break;
  case Opt::connect_timeout: o.redis.connect_timeout = positive_duration_value(typed, value); break;
  case Opt::io_timeout: o.redis.io_timeout = positive_duration_value(typed, value); break;
  case Opt::step: o.redis.step = positive_duration_value(typed, value); break;
  case Opt::max_step: o.redis.max_step = positive_duration_value(typed, value); break;
  case Opt::outage_allowance:
    o.redis.outage_allowance = duration_value(typed, value, AllowInfinite::yes);
    break;
  case Opt::kill_after: o.redis.kill_after = duration_value(typed, value); break;
  case Opt::ratio: {
    // A plain decimal >= 1: the duration grammar without a unit.
    const bool unitless = !value.empty() && value.back() >= '0' && value.back() <= '9';
    const auto as_ns = unitless ? parse_duration(value, AllowInfinite::no) : std::nullopt;
    if (!as_ns || as_ns->count() < 1'000'000'000)
      usage(Msg::usage_bad_duration, {{"option", typed}, {"value", value}});
    o.redis.ratio = static_cast<double>(as_ns->count()) / 1e9;
    break;
  }
  case Opt::tls_ca:
  case Opt::tls_cert:
  case Opt::tls_key: {
    if (value.empty()) usage(Msg::usage_missing_value, {{"option", typed}});
    TlsFiles& f = o.redis.tls;
    (decl.id == Opt::tls_ca ? f.ca : decl.id == Opt::tls_cert ? f.cert : f.key) = std::string(value);
    break;
  }
  case Opt::cache_dir:
    if (value.empty()) usage(Msg::usage_missing_value, {{"option", typed}});
    o.cache.dir = std::string(value);
    break;
  case Opt::max_age: o.cache.max_age = duration_value(typed, value); break;
  case Opt::stale: o.cache.stale = duration_value(typed, value); break;
  case Opt::background: o.cache.background = true; break;
  case Opt::stale_if_error: o.cache.stale_if_error = true; break;
  case Opt::drop: o.cache.drop = true; break;
  case Opt::gc: o.cache.gc = true; break;
  case Opt::list: o.cache.list = true; break;
  case Opt::stats: o.cache.stats = true; break;
  case Opt::zero: o.cache.stats_zero = true; break;
  case Opt::format: o.cache.stats_format = stats_format_value(typed, value); break;
  case Opt::force: o.cache.force = true; break;
  case Opt::read_only: o.cache.read_only = true; break;
  case Opt::keep_stderr: o.cache.keep_stderr = true; break;
  case Opt::explain: o.cache.explain = true; break;
  case Opt::compress: o.cache.compress = true; break;
  case Opt::sign_key:
    if (value.empty()) usage(Msg::usage_missing_value, {{"option", typed}});
    o.cache.sign_key = std::string(value);
    break;
  case Opt::depends:
    if (auto why = bad_depends_path(value))
      usage(Msg::usage_bad_depends, {{"option", typed}, {"error", *why}});
    o.cache.depends.emplace_back(value);
    break;
  case Opt::exclude:
    if (auto why = bad_exclude_pattern(value))
      usage(Msg::usage_bad_depends, {{"option", typed}, {"error", *why}});
    o.cache.excludes.emplace_back(value);
    break;
  case Opt::output:
    if (auto why = bad_output_path(value))
      usage(Msg::usage_bad_depends, {{"option", typed}, {"error", *why}});
    o.cache.outputs.emplace_back(value);
    break;
  case Opt::warm: o.cache.warm = true; break;
  case Opt::warm_from:
    if (value.empty()) usage(Msg::usage_missing_value, {{"option", typed}});
    o.cache.warm = true;
    o.cache.warm_from.emplace_back(value);
    break;
  case Opt::store: p.store = std::string(value); break;
  case Opt::store_token_file:
    if (value.empty()) usage(Msg::usage_missing_value, {{"option", typed}});
    o.cache.store_token_file = std::string(value);
    break;
  case Opt::store_timeout: o.cache.store_timeout = positive_duration_value(typed, value); break;
  case Opt::max_entry: {
    const auto size = parse_size(value);
    if (!size || *size == 0) usage(Msg::usage_bad_size, {{"option", typed}, {"value", value}});
    o.cache.max_entry = *size;
    o.cache.max_entry_given = true;
    break;
  }
  case Opt::max_size: {
    const auto size = parse_size(value);
    if (!size) usage(Msg::usage_bad_size, {{"option", typed}, {"value", value}});
    o.cache.max_size = *size;
    break;
  }
  case Opt::max_unused: o.cache.max_unused = duration_value(typed, value); break;
  case Opt::on_lost:
    if (value == "warn")
      o.redis.on_lost = OnLost::warn;
    else if (value == "term")
      o.redis.on_lost = OnLost::term;
    else
      usage(Msg::usage_bad_env, {{"option", typed}, {"value", value}});
    break;
  }
}

// CLI11 2.1.2 reads "--dir=" as "--dir" and takes the next word for its
// value, accepts "--close=true" for a flag, and takes an empty word for the
// name of an option group (a subcommand named ""). So every "--NAME=VALUE"
// word and every empty word is handed to it with a NUL at its end, a byte no
// argv word can hold: a value is never empty, and never one a flag accepts.
// unmark() takes it off again; KEY and the command are taken from argv itself.
std::vector<std::string> mark_equals(int argc, const char* const* argv, int first) {
  std::vector<std::string> args; // reversed, as App::parse wants them
  args.reserve(static_cast<std::size_t>(argc - first));
  for (int i = argc - 1; i >= first; --i) {
    std::string word = argv[i];
    if (word.empty() || (word.starts_with("--") && word.find('=') != std::string::npos)) word.push_back('\0');
    args.push_back(std::move(word));
  }
  return args;
}

std::string_view unmark(std::string_view value) {
  if (!value.empty() && value.back() == '\0') value.remove_suffix(1);
  return value;
}

// Declares `decl` on `app`. While parsing, its value is applied the moment
// CLI11 reads it (trigger_on_parse), so options act in the order given ("the
// last of -n and -w wins") and a bad value is reported in that order too.
CLI::Option* declare(CLI::App& app, const OptionDecl& decl, Parsed* p) {
  const std::string names(decl.names);
  CLI::Option* opt = nullptr;
  if (decl.value_name.empty()) {
    opt = app.add_flag_callback(names, [p, id = decl.id] {
      const OptionDecl d = decl_of(id); // by value: the packed table holds no OptionDecl
      if (p) apply(*p, d, long_name(d), {});
    });
    opt->disable_flag_override(); // --close=VALUE is an error (see mark_equals)
  } else {
    opt = app.add_option_function<std::string>(names, [p, id = decl.id](const std::string& value) {
      const OptionDecl d = decl_of(id);
      if (p) apply(*p, d, long_name(d), unmark(value));
    });
    opt->type_name(std::string(decl.value_name));
  }
  opt->trigger_on_parse()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  return opt;
}

// For a parse (p given), an App with the options the pre-scan found in argv
// (p->named); for the help texts (p == nullptr), one with every option that
// `command` accepts, with descriptions, groups, defaults and variables.
void declare_options(CLI::App& app, Command command, Parsed* p) {
  app.set_help_flag();  // -h/--help is ours: a flag like the others
  app.prefix_command(); // KEY and the words after it come back verbatim
  if (p) {
    for (std::size_t i = 0; i < option_table.size(); ++i)
      if (p->named[i]) declare(app, option_table[i], p);
    return;
  }
  for (const auto& decl : option_table) {
    if (!declared_for(decl, command)) continue;
    CLI::Option* opt = declare(app, decl, p);
    opt->description(std::string(decl.description));
    opt->group(std::string(decl.group));
    if (!decl.default_text.empty()) opt->default_str(std::string(decl.default_text));
    if (!decl.env.empty()) opt->envname(std::string(decl.env));
  }
}

// Whether CLI11 took `word` for an option (App::_recognize): those it did not
// know are in remaining() before KEY.
bool looks_like_option(const std::string& word) {
  std::string name, value;
  if (CLI::detail::split_long(word, name, value)) return true;
  return CLI::detail::split_short(word, name, value) && !(name[0] >= '0' && name[0] <= '9');
}

// A word right after KEY that names one of our options is a slip, not a
// command (`cache k --depends x -- make` would run "--depends"): no command
// is called that. `-- CMD` runs one that is.
void refuse_option_after_key(const Options& o, std::string_view word) {
  if (word.size() < 2 || word[0] != '-') return;
  const std::string_view name = word.starts_with("--") ? word.substr(0, word.find('=')) : word.substr(0, 2);
  if (decl_named(name)) usage(Msg::usage_option_after_key, {{"option", name}, {"key", o.key}});
}

// The command after KEY: `-- CMD...`, `-c STRING`, or CMD... verbatim.
void parse_command_words(Parsed& p, std::vector<std::string>::const_iterator it,
                         std::vector<std::string>::const_iterator end) {
  Options& o = p.opts;
  std::optional<std::string> shell = p.shell_before_key;
  if (it != end) {
    const std::string_view first = *it;
    if (first == "--") {
      ++it;
    } else if (first == "-c" || first == "--command" || first.starts_with("--command=")) {
      const bool attached = first.starts_with("--command=");
      const auto words = (end - it) - (attached ? 1 : 2);
      if (words != 0) usage(Msg::usage_shell_one_word, {{"option", attached ? "--command" : first}});
      if (shell) usage(Msg::usage_command_twice);
      shell = attached ? std::string(first.substr(10)) : *(it + 1);
      it = end;
    } else {
      refuse_option_after_key(o, first);
    }
  }
  if (it != end && shell) usage(Msg::usage_command_twice);
  if (shell) {
    o.argv = {"/bin/sh", "-c", *shell};
  } else {
    o.argv.assign(it, end);
    if (o.argv.empty()) usage(Msg::usage_missing_command);
  }
}

const char* env_value(const EnvLookup& getenv, const char* name) {
  const char* v = getenv(name);
  return (v && *v) ? v : nullptr; // an empty variable counts as unset
}

// The TLS options fit the URL and their files can be read (SPEC §12);
// `named(id)` is how the user gave the option, for the message. Whether
// OpenSSL can use them is asked before the first connection (app).
// `https_store`: --tls-ca verifies that server too.
template <class Named> void check_tls(const RedisSettings& r, bool https_store, const Named& named) {
  const TlsFiles& f = r.tls;
  if (!uses_tls(r)) {
    for (auto [id, file] : {std::pair{Opt::tls_ca, &f.ca}, {Opt::tls_cert, &f.cert}, {Opt::tls_key, &f.key}})
      if (!file->empty() && !(https_store && decl_of(id).scope == Scope::tls_or_store))
        usage(Msg::usage_option_needs, {{"option", named(id)}, {"value", "a rediss:// URL"}});
    return;
  }
  if (!f.cert.empty() && f.key.empty())
    usage(Msg::usage_option_needs, {{"option", named(Opt::tls_cert)}, {"value", "--tls-key"}});
  if (!f.key.empty() && f.cert.empty())
    usage(Msg::usage_option_needs, {{"option", named(Opt::tls_key)}, {"value", "--tls-cert"}});
  if (auto e = tls_check_readable(f)) usage(Msg::usage_tls_setup, {{"error", e->text}});
}

// The servers of a quorum are independent plain servers, each named once.
void check_quorum(const std::vector<RedisUrl>& quorum) {
  for (std::size_t i = 0; i < quorum.size(); ++i) {
    const RedisUrl& u = quorum[i];
    if (u.transport == RedisUrl::Transport::sentinel)
      usage(Msg::usage_quorum_sentinel, {{"server", u.display()}});
    for (std::size_t j = 0; j < i; ++j) {
      const RedisUrl& v = quorum[j];
      if (u.transport == v.transport && u.host == v.host && u.port == v.port &&
          u.socket_path == v.socket_path)
        usage(Msg::usage_redis_twice, {{"server", u.display()}});
    }
  }
}

bool https_store(const Options& o) { return o.command == Command::cache && store_talks_tls(o.cache); }

// Whether the command line gave option `id`.
bool given(const Parsed& p, Opt id) { return p.given[index_of(id)]; }

// Whether the command line or the environment gave option `id`.
bool given_anywhere(const Parsed& p, Opt id) { return given(p, id) || p.from_env[index_of(id)]; }

// How messages name option `id`: as typed when the command line gave it,
// else by its variable.
std::string_view typed_name_of(const Parsed& p, Opt id) {
  const OptionDecl& d = decl_of(id);
  return given(p, id) ? long_name(d) : d.env;
}

// What the store that --store spells takes (nothing for none, or one spelled wrong).
StoreTraits named_store(const Parsed& p) {
  const StoreTraits* t = p.store ? store_spelled(*p.store) : nullptr;
  return t ? *t : StoreTraits{};
}

// Whether this run uses a lock backend: all but `cache --gc` and `cache
// --list` of a store other than Redis, and for `cache --gc` of an http
// store, whose last uses live in the -r Redis (SPEC §22).
bool uses_backend(const Parsed& p) {
  const Options& o = p.opts;
  if (o.command != Command::cache) return true;
  const StoreTraits store = named_store(p);
  if (o.cache.gc || o.cache.stats) return store.in_redis || store.objects;
  return !o.cache.list || store.in_redis;
}

// A rediss:// URL among those named (unparsable ones are reported later).
bool names_tls_server(const Parsed& p) {
  return std::any_of(p.redis_urls.begin(), p.redis_urls.end(), [](const std::string& text) {
    const auto url = parse_redis_url(text);
    return std::holds_alternative<RedisUrl>(url) && std::get<RedisUrl>(url).tls;
  });
}

// Whether the variable of `d` is read in this run: where its option would
// be accepted and is used.
bool env_applies(const Parsed& p, const OptionDecl& d) {
  const Command c = p.opts.command;
  if ((d.commands & command_bit(c)) == 0 || !declared_for(d, c)) return false;
  switch (d.scope) {
  case Scope::any:
  case Scope::cache: return true;
  case Scope::backend: return uses_backend(p) && !given(p, Opt::dir) && !given(p, Opt::redis);
  case Scope::lock: return uses_backend(p);
  case Scope::redis: return uses_backend(p) && p.redis_url;
  case Scope::tls: return uses_backend(p) && p.redis_url && names_tls_server(p);
  case Scope::tls_or_store:
    return (uses_backend(p) && p.redis_url && names_tls_server(p)) || named_store(p).objects;
  case Scope::http: return named_store(p).token;
  case Scope::objects: return named_store(p).objects;
  }
  return false;
}

// Which options' variables may be set: those among getenv.ours when the
// lookup found them all (most runs: none), else every one.
std::array<bool, option_table.size()> variables_set(const EnvLookup& getenv) {
  std::array<bool, option_table.size()> set{};
  if (!getenv.ours) {
    set.fill(true);
    return set;
  }
  constexpr std::size_t ours = std::string_view("BUFFERLOCK_").size();
  for (const std::string_view entry : *getenv.ours)
    for (const std::size_t i : env_order) {
      const std::string_view name = env_at(i).substr(ours);
      // The first letter after the prefix tells most names apart.
      if (entry.size() > ours + name.size() && entry[ours] == name[0] &&
          entry.substr(ours, name.size()) == name && entry[ours + name.size()] == '=')
        set[i] = true;
    }
  return set;
}

// The environment stands in for every option the command line did not
// give, where that option applies (env_applies), in the order of env_rank.
// An empty variable counts as unset; a flag's variable is 1 (on) or 0.
void fill_from_environment(Parsed& p, const EnvLookup& getenv) {
  const std::array<bool, option_table.size()> set = variables_set(getenv);
  for (const std::size_t i : env_order) {
    if (!set[i] || p.given[i] || p.from_env[i]) continue;
    const OptionDecl& d = option_table[i];
    if (!env_applies(p, d)) continue;
    const char* v = env_value(getenv, d.env.data()); // NUL-terminated (option_at)
    if (!v || (d.value_name.empty() && v == std::string_view("0"))) continue;
    if (d.value_name.empty() && v != std::string_view("1"))
      usage(Msg::usage_bad_env, {{"option", d.env}, {"value", v}});
    apply(p, d, d.env, d.value_name.empty() ? std::string_view{} : std::string_view(v));
  }
}

// --on-lost term and the TTL (SPEC §7, lock/lease.hpp): the defaults are
// fitted there; a value given (on the command line or in the environment)
// that cannot fit is a usage error naming it.
template <class Name> void check_lease(Parsed& p, const Name& typed_name) {
  const RedisLockSettings& r = p.opts.redis;
  const LeaseGiven lease_given{given_anywhere(p, Opt::connect_timeout), given_anywhere(p, Opt::io_timeout),
                               given_anywhere(p, Opt::kill_after)};
  const std::optional<LeaseMisfit> misfit = fit_lease(p.opts.redis, lease_given);
  if (!misfit) return;
  if (misfit->kind == LeaseMisfit::Kind::ttl_short) {
    // The timeouts that were given, and the shortened defaults, by name.
    const auto part = [&](bool explicit_one, Opt id) {
      return explicit_one ? std::string(typed_name(id)) : std::string("TTL/36");
    };
    usage(Msg::usage_ttl_short_for_term,
          {{"ttl", std::string(typed_name(Opt::ttl))},
           {"value", format_seconds(r.ttl)},
           {"timeouts", part(lease_given.connect_timeout, Opt::connect_timeout) + " + " +
                            part(lease_given.io_timeout, Opt::io_timeout)},
           {"attempt", format_seconds(misfit->attempt)}});
  }
  usage(Msg::usage_kill_after_fit, {{"option", std::string(typed_name(Opt::kill_after))},
                                    {"value", format_seconds(r.kill_after)},
                                    {"ttl", std::string(typed_name(Opt::ttl))},
                                    {"ttl_value", format_seconds(r.ttl)},
                                    {"most", format_seconds(misfit->most)}});
}

void choose_backend(Parsed& p, const EnvLookup& getenv) {
  Options& o = p.opts;
  if (p.dir && p.redis_url) usage(Msg::usage_both_backends);
  if (p.redis_url) {
    o.backend = Backend::redis;
    for (const auto& text : p.redis_urls) {
      auto parsed = parse_redis_url(text);
      if (auto* e = std::get_if<UrlError>(&parsed))
        usage(Msg::usage_bad_redis_url, {{"server", redact_url(text)}, {"error", e->reason}});
      RedisUrl url = std::get<RedisUrl>(parsed);
      if (!url.password) {
        if (const char* pw = env_value(getenv, "BUFFERLOCK_REDIS_PASSWORD"))
          url.password = pw;
        else if (const char* cli_pw = env_value(getenv, "REDISCLI_AUTH"))
          url.password = cli_pw;
      }
      o.redis.quorum.push_back(std::move(url));
    }
    if (o.redis.quorum.empty()) usage(Msg::usage_bad_redis_url, {{"server", ""}, {"error", "no URL"}});
    o.redis.url = o.redis.quorum.front();
    o.redis.password = o.redis.url.password;
    if (o.redis.quorum.size() == 1) o.redis.quorum.clear();
    check_quorum(o.redis.quorum);
    if (o.shared) usage(Msg::usage_shared_with_redis);
    const auto typed_name = [&](Opt id) { return typed_name_of(p, id); };
    check_tls(o.redis, https_store(o), typed_name);
    if (o.command == Command::run || o.command == Command::cache) check_lease(p, typed_name);
  } else {
    o.backend = Backend::file;
    o.dir = p.dir.value_or("");
    if (!p.first_redis_option.empty())
      usage(Msg::usage_redis_option_with_file, {{"option", p.first_redis_option}});
    if (!o.redis.tls.ca.empty() && !https_store(o))
      usage(Msg::usage_option_needs, {{"option", "--tls-ca"}, {"value", "a rediss:// URL or an https:// --store"}});
  }
  if (p.wait) {
    o.wait = *p.wait;
  } else if (o.command == Command::cache) {
    o.wait = infinite_duration; // a cache miss waits for the builder (SPEC §8)
  }
}

// --store (BUFFERLOCK_CACHE_STORE): the cache directory, the Redis server,
// or an HTTP server or S3 bucket (SPEC §15, §18, §19), as the store table
// spells them (cache/open_store.hpp); the options only some stores take.
void choose_store(Parsed& p) {
  CacheSettings& c = p.opts.cache;
  if (p.store) {
    const std::string_view typed = typed_name_of(p, Opt::store);
    if (!store_spelled(*p.store))
      usage(Msg::usage_bad_store, {{"option", typed}, {"value", redact_url(*p.store)}});
    if (auto e = spell_store(c, *p.store))
      usage(Msg::usage_bad_store_url, {{"option", typed}, {"value", e->shown}, {"error", e->why}});
  }
  const StoreTraits& store = store_traits(c);
  for (std::size_t i = 0; i < option_table.size(); ++i) {
    const Scope scope = option_rest[i].scope;
    if (p.given[i] && ((scope == Scope::http && !store.token) || (scope == Scope::objects && !store.objects)))
      usage(Msg::usage_option_needs,
            {{"option", long_name(option_table[i])}, {"value", "an http:// or https:// --store"}});
  }
  // As for rediss:// (SPEC §12): a CA file that cannot be used is a usage
  // error, not a store that fails verification on every run (its PEM is
  // judged before the first connection: app). An S3 endpoint (from the
  // environment) may be https too. --tls-ca is one option for both layers:
  // the store gets its own copy.
  const std::string& ca = p.opts.redis.tls.ca;
  if (!store_talks_tls(c) || ca.empty()) return;
  if (auto e = tls_check_readable(TlsFiles{ca, {}, {}})) usage(Msg::usage_tls_setup, {{"error", e->text}});
  c.store_ca = ca;
}

// A read-only call changes nothing in the store: --force, --drop and --gc
// are refused, naming how read-only was asked for (SPEC §22).
void check_read_only(const Parsed& p) {
  const CacheSettings& c = p.opts.cache;
  if (!c.read_only) return;
  const std::string_view how =
      given(p, Opt::read_only) ? std::string_view("--read-only") : std::string_view("BUFFERLOCK_CACHE_READ_ONLY=1");
  for (const auto& [on, id] :
       {std::pair{c.force, Opt::force}, {c.drop, Opt::drop}, {c.gc, Opt::gc}, {c.stats_zero, Opt::zero}})
    if (on) usage(Msg::usage_read_only_with, {{"option", long_name(decl_of(id))}, {"value", how}});
}

// --stats (SPEC §21): alone of --list, --drop and --gc; --zero and --format
// only with it; --json is --format json.
void check_stats(Parsed& p) {
  CacheSettings& c = p.opts.cache;
  if (!c.stats) {
    for (const Opt id : {Opt::zero, Opt::format})
      if (given(p, id)) usage(Msg::usage_option_needs, {{"option", long_name(decl_of(id))}, {"value", "--stats"}});
    return;
  }
  if (c.list || c.drop || c.gc)
    usage(Msg::usage_option_needs, {{"option", "--stats"}, {"value", "no --list, --drop or --gc"}});
  if (p.opts.json) {
    if (given(p, Opt::format) && c.stats_format != StatsFormat::json)
      usage(Msg::usage_option_needs, {{"option", "--json"}, {"value", "no --format other than json"}});
    c.stats_format = StatsFormat::json;
  }
}

// --store redis: entries and locks on one Redis server (SPEC §15).
void check_redis_store(Parsed& p, const EnvLookup& getenv) {
  if (p.redis_urls.size() > 1)
    usage(Msg::usage_store_servers, {{"count", std::to_string(p.redis_urls.size())}});
  choose_backend(p, getenv);
  if (p.opts.backend != Backend::redis)
    usage(Msg::usage_option_needs, {{"option", "--store redis"}, {"value", "a Redis server (--redis URL)"}});
  // Several URLs in BUFFERLOCK_REDIS name a quorum: entries need one server.
  if (!p.opts.redis.quorum.empty())
    usage(Msg::usage_store_servers, {{"count", std::to_string(p.opts.redis.quorum.size())}});
}

// An option given to a subcommand that does not take it (SPEC §14: --slots,
// --also; --json).
// Only the few options that some subcommand of a KEY refuses are looked at.
constexpr std::size_t narrow_count =
    std::count_if(option_source.begin(), option_source.end(), [](const OptionDecl& d) {
      return (d.commands & subcommands_of_a_key) != subcommands_of_a_key;
    });
constexpr std::array<std::size_t, narrow_count> make_narrow_options() {
  std::array<std::size_t, narrow_count> out{};
  std::size_t n = 0;
  for (std::size_t i = 0; i < option_rest.size(); ++i)
    if ((option_rest[i].commands & subcommands_of_a_key) != subcommands_of_a_key) out[n++] = i;
  return out;
}
constexpr std::array<std::size_t, narrow_count> narrow_options = make_narrow_options();

void refuse_options_not_here(const Parsed& p) {
  const Command c = p.opts.command;
  for (const std::size_t i : narrow_options)
    if (p.given[i] && (option_rest[i].commands & command_bit(c)) == 0)
      usage(Msg::usage_option_not_here,
            {{"option", long_name(option_table[i])}, {"command", subcommands[static_cast<std::size_t>(c)]}});
}

// --slots (or BUFFERLOCK_SLOTS): the command is told its slot; not with
// --shared (SPEC §14).
void check_slots(Parsed& p) {
  Options& o = p.opts;
  o.slots_given = given_anywhere(p, Opt::slots);
  if (o.shared && (given(p, Opt::slots) || o.slots != 1)) usage(Msg::usage_slots_shared);
}

// CLI11's parse errors as our messages. CLI11 2.1.2 reports an option whose
// value is missing (always the last word: nothing was left to take) and a
// flag given "=VALUE"; unknown options stay in remaining() (prefix_command).
[[noreturn]] void usage_from(const CLI::ParseError& e, int argc, const char* const* argv) {
  const std::string_view what = e.what();
  if (what.ends_with(" was given a disallowed flag override")) {
    // Only "--NAME=VALUE" reaches it: a short flag's "rest" is more flags.
    const std::string typed = "--" + std::string(what.substr(0, what.find(' ')));
    usage(Msg::usage_unexpected_value, {{"option", typed}});
  }
  if (e.get_name() == "ArgumentMismatch" && argc > 0) {
    const std::string_view last = argv[argc - 1];
    // "--wait" or "--wait=" as typed; in a cluster ("-nw") the last letter.
    const std::string typed =
        last.starts_with("--") ? std::string(last.substr(0, last.find('='))) : std::string("-") + last.back();
    usage(Msg::usage_missing_value, {{"option", typed}});
  }
  usage(Msg::usage_bad_command_line);
}

// Runs CLI11 over argv[first..] for `command`; fills p from the options and
// returns the words from KEY on (and whether a "--" came before KEY).
std::vector<std::string> parse_options(Parsed& p, int argc, const char* const* argv, int first,
                                       Declare declare, bool& dashdash_before_key) {
  // CLI11 pays ~15-20k instructions per declared option: it is given only
  // those that argv names (or, for tests, all that the subcommand accepts).
  const std::array<ScanOption, option_table.size()> shapes = scan_table(p.opts.command);
  if (declare == Declare::named) {
    const std::span<const char* const> words(argv + first, static_cast<std::size_t>(argc - first));
    scan_options(shapes, words, p.named);
  } else {
    for (std::size_t i = 0; i < shapes.size(); ++i)
      p.named[i] = !shapes[i].names.empty();
  }
  CLI::App app;
  declare_options(app, p.opts.command, &p);
  std::vector<std::string> args = mark_equals(argc, argv, first);
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    usage_from(e, argc, argv);
  }
  const std::vector<std::string> rest = app.remaining();
  // CLI11 keeps the options it does not know, in order, before KEY.
  auto it = rest.begin();
  if (it != rest.end() && *it != "--" && looks_like_option(*it)) {
    const std::string typed = it->substr(0, it->find('='));
    const std::optional<OptionDecl> d = decl_named(typed);
    if (d && cache_only(d->scope)) usage(Msg::usage_cache_option, {{"option", typed}});
    usage(Msg::usage_unknown_option, {{"option", typed}});
  }
  dashdash_before_key = it != rest.end() && *it == "--";
  if (dashdash_before_key) {
    ++it;
  } else if (it != rest.end() && it->size() > 1 && (*it)[0] == '-') {
    // getopt would read these as options; CLI11 leaves "-1", "-!", "---x"
    // and the "-1" of a cluster "-n1" to positionals. Only after "--" are
    // they KEYs.
    usage(Msg::usage_unknown_option, {{"option", it->substr(0, it->find('='))}});
  }
  // remaining() ends with argv's last words: take them unmarked from argv.
  return {argv + argc - (rest.end() - it), argv + argc};
}

// The usage lines and introduction of --help, then one section per group of
// options, then the exit statuses and examples (help.cpp has the prose).
class HelpFormatter final : public CLI::Formatter {
public:
  explicit HelpFormatter(Command topic) : topic_(topic) {}

  std::string make_help(const CLI::App* app, std::string, CLI::AppFormatMode) const override {
    std::string out(help_prose(topic_, HelpPart::intro));
    for (const std::string& group : app->get_groups()) {
      if (topic_ == Command::cache && group != g_cache && group != g_output) continue;
      out += "\n" + group;
      out += topic_ == Command::run && group == g_cache ? " (bufferlock cache --help for more):\n" : ":\n";
      for (const CLI::Option* opt :
           app->get_options([&](const CLI::Option* o) { return o->get_group() == group; }))
        out += option_entry(*opt);
    }
    out += help_prose(topic_, HelpPart::outro);
    return out;
  }

private:
  static constexpr std::size_t column = 27; // where descriptions start
  static constexpr std::size_t width = 88;

  static std::string option_entry(const CLI::Option& opt) {
    std::string names = "  ";
    names += opt.get_snames().empty() ? "    " : "-" + opt.get_snames().front() + ", ";
    bool first = true;
    for (const std::string& l : opt.get_lnames()) {
      if (std::find(hidden_names.begin(), hidden_names.end(), l) != hidden_names.end()) continue;
      names += (first ? "--" : ", --") + l;
      first = false;
    }
    if (!opt.get_type_name().empty() && opt.get_expected_max() > 0) names += " " + opt.get_type_name();
    std::string text = opt.get_description();
    std::string notes;
    if (!opt.get_default_str().empty()) notes = "default " + opt.get_default_str();
    if (!opt.get_envname().empty()) notes += (notes.empty() ? "env " : "; env ") + opt.get_envname();
    if (!notes.empty()) text += " (" + notes + ")";
    std::string out = names;
    if (names.size() + 1 >= column)
      out += "\n" + std::string(column, ' ');
    else
      out += std::string(column - names.size(), ' ');
    return out + wrap(text) + "\n";
  }

  // `text` in lines that end before `width`, continued at `column`. A word
  // that begins with '-' stays with the one before it: no continuation line
  // may look like an option of its own.
  static std::string wrap(std::string_view text) {
    std::string out;
    std::size_t line = column;
    while (!text.empty()) {
      std::size_t space = text.find(' ');
      while (space != std::string_view::npos && space + 1 < text.size() && text[space + 1] == '-')
        space = text.find(' ', space + 1);
      const std::string_view word = text.substr(0, space);
      text = space == std::string_view::npos ? std::string_view{} : text.substr(space + 1);
      if (line > column && line + 1 + word.size() > width) {
        out += "\n" + std::string(column, ' ');
        line = column;
      } else if (line > column) {
        out += ' ';
        ++line;
      }
      out += word;
      line += word.size();
    }
    return out;
  }

  Command topic_;
};

} // namespace

bool is_subcommand(std::string_view word) {
  return std::find(subcommands.begin(), subcommands.end(), word) != subcommands.end();
}

namespace {

// Whether `a` becomes `b` by one insertion, deletion, substitution or swap of
// two neighbours.
bool one_edit_apart(std::string_view a, std::string_view b) {
  if (a.size() > b.size()) std::swap(a, b);
  if (b.size() - a.size() > 1) return false;
  std::size_t i = 0;
  while (i < a.size() && a[i] == b[i])
    ++i;
  if (i == a.size()) return a.size() != b.size(); // a prefix one shorter (equal: no edit)
  if (a.size() < b.size()) return a.substr(i) == b.substr(i + 1);
  if (a.substr(i + 1) == b.substr(i + 1)) return true;
  return i + 1 < a.size() && a[i] == b[i + 1] && a[i + 1] == b[i] && a.substr(i + 2) == b.substr(i + 2);
}

} // namespace

std::string_view subcommand_near(std::string_view key) {
  for (const std::string_view s : subcommands)
    if (one_edit_apart(key, s)) return s;
  return {};
}

namespace {

// The subcommand argv[1] names; run when it names none.
Command subcommand_of(int argc, const char* const* argv) {
  if (argc < 2) return Command::run;
  // `subcommands` lists them in the order of Command.
  const auto* it = std::find(subcommands.begin(), subcommands.end(), std::string_view(argv[1]));
  return it == subcommands.end() ? Command::run : static_cast<Command>(it - subcommands.begin());
}

} // namespace

std::string help_text(Command topic) {
  topic = topic == Command::cache ? Command::cache : Command::run;
  CLI::App app;
  declare_options(app, Command::cache, nullptr); // every option; the formatter picks

  return HelpFormatter(topic).make_help(&app, "", CLI::AppFormatMode::Normal);
}

std::vector<ScanOption> accepted_options(Command command) {
  std::vector<ScanOption> out;
  for (const ScanOption& s : scan_table(command))
    if (!s.names.empty()) out.push_back(s);
  return out;
}

std::vector<std::string_view> options_declared(int argc, const char* const* argv) {
  const Command command = subcommand_of(argc, argv);
  const int first = argc > 1 && is_subcommand(argv[1]) ? 2 : 1;
  std::array<bool, option_table.size()> named{};
  scan_options(scan_table(command), std::span(argv + first, static_cast<std::size_t>(argc - first)), named);
  std::vector<std::string_view> out;
  for (std::size_t i = 0; i < named.size(); ++i)
    if (named[i]) out.push_back(option_table[i].names);
  return out;
}

namespace {

// What the subcommand of `o` decided, and the plain values, into `r`; the
// callers copy or move the members that own memory.
void fill_lock_request(const Options& o, LockRequest& r) {
  const Command c = o.command;
  r.backend = o.backend;
  r.wait = o.wait;
  r.shared = o.shared;
  r.slots = o.slots;
  r.slots_given = o.slots_given;
  r.busy_exit = o.busy_exit;
  r.error_exit = o.error_exit;
  r.fail_open = o.fail_open && (c == Command::run || c == Command::cache);
  r.verbosity = o.verbosity;
  r.purpose = c == Command::cache ? WaitFor::build : WaitFor::lock;
}

} // namespace

LockRequest lock_request(const Options& o) {
  LockRequest r;
  fill_lock_request(o, r);
  r.key = o.key;
  r.dir = o.dir;
  r.redis = o.redis;
  r.also = o.also;
  return r;
}

CacheRequest cache_request(Options&& o) {
  CacheRequest r;
  fill_lock_request(o, r);
  r.key = std::move(o.key);
  r.dir = std::move(o.dir);
  r.redis = std::move(o.redis);
  r.also = std::move(o.also);
  r.cache = std::move(o.cache);
  r.argv = std::move(o.argv);
  r.json = o.json;
  return r;
}

Options parse_command_line(int argc, const char* const* argv, const EnvLookup& getenv, Declare declare) {
  Parsed p;
  // Read first, for the texts of errors found before the rest of the
  // environment (fill_from_environment): --messages overrides it.
  const char* env_messages = env_value(getenv, env_of(Opt::messages));
  messages_file_seen = env_messages ? env_messages : "";
  p.opts.messages_file = messages_file_seen;
  p.from_env[index_of(Opt::messages)] = true; // read: the loop leaves it be
  const bool explicit_command = argc > 1 && is_subcommand(argv[1]);
  const int first = explicit_command ? 2 : 1;
  p.opts.command = subcommand_of(argc, argv);
  bool dashdash = false;
  const std::vector<std::string> words = parse_options(p, argc, argv, first, declare, dashdash);
  Options& o = p.opts;
  fill_from_environment(p, getenv);
  if (o.command == Command::help || o.command == Command::version || o.command == Command::list_messages)
    return std::move(o); // p dies here: no copy
  const bool have_key = !words.empty();
  if (have_key) {
    o.key = words.front();
    if (!dashdash && !explicit_command && is_subcommand(o.key))
      usage(Msg::usage_key_is_subcommand, {{"key", display_key(o.key)}});
  }
  const auto after_key = have_key ? words.begin() + 1 : words.end();
  if (o.command == Command::cache) {
    const CacheSettings& c = o.cache;
    if (c.drop && c.gc) usage(Msg::usage_drop_and_gc);
    check_read_only(p);
    if (c.list && (c.drop || c.gc))
      usage(Msg::usage_option_needs, {{"option", "--list"}, {"value", "no --drop or --gc"}});
    check_stats(p);
    if (o.json && !c.list && !c.stats)
      usage(Msg::usage_option_needs, {{"option", "--json"}, {"value", "--list"}});
    choose_store(p);
    if (c.stale && !c.max_age)
      usage(Msg::usage_option_needs, {{"option", "--stale"}, {"value", "--max-age"}});
    if (c.background && !c.stale)
      usage(Msg::usage_option_needs, {{"option", "--background"}, {"value", "--stale"}});
    if (!c.excludes.empty() && c.depends.empty())
      usage(Msg::usage_option_needs, {{"option", "--exclude"}, {"value", "--depends"}});
    if (c.warm && c.outputs.empty())
      usage(Msg::usage_option_needs, {{"option", "--warm"}, {"value", "--output"}});
    if (c.max_size && !c.gc) usage(Msg::usage_option_needs, {{"option", "--max-size"}, {"value", "--gc"}});
    if (c.max_unused && !c.gc)
      usage(Msg::usage_option_needs, {{"option", "--max-unused"}, {"value", "--gc"}});
    if (c.gc) {
      if (have_key) usage(Msg::usage_extra_argument, {{"value", o.key}});
      if (store_traits(c).in_redis)
        check_redis_store(p, getenv);
      else if (store_traits(c).objects)
        choose_backend(p, getenv); // -r: where the store's last uses are
      return std::move(o);
    }
    if (c.list) {
      if (have_key) usage(Msg::usage_extra_argument, {{"value", o.key}});
      if (store_traits(c).in_redis) check_redis_store(p, getenv);
      return std::move(o);
    }
    if (c.stats) {
      if (have_key) usage(Msg::usage_extra_argument, {{"value", o.key}});
      if (store_traits(c).in_redis)
        check_redis_store(p, getenv);
      else if (store_traits(c).objects)
        choose_backend(p, getenv); // -r: where the store's counters are
      return std::move(o);
    }
  }
  refuse_options_not_here(p);
  if (o.command == Command::list) {
    if (have_key) usage(Msg::usage_extra_argument, {{"value", o.key}});
  } else if (!have_key) {
    usage(Msg::lock_key_undefined);
  }

  const auto extra = [&](auto it) {
    if (it != words.end()) usage(Msg::usage_extra_argument, {{"value", *it}});
  };
  switch (o.command) {
  case Command::cache:
    if (o.cache.drop)
      extra(after_key);
    else
      parse_command_words(p, after_key, words.end());
    break;
  case Command::run: parse_command_words(p, after_key, words.end()); break;
  case Command::status:
  case Command::acquire: extra(after_key); break;
  case Command::list: break;
  case Command::release:
  case Command::extend:
    if (after_key == words.end()) usage(Msg::usage_missing_value, {{"option", "TOKEN"}});
    o.token = *after_key;
    extra(after_key + 1);
    break;
  case Command::help:
  case Command::version:
  case Command::list_messages: break;
  }
  if (p.shell_before_key && o.command != Command::run && o.command != Command::cache)
    usage(Msg::usage_extra_argument, {{"value", "-c"}});
  if (o.close && p.no_fork) usage(Msg::usage_close_and_no_fork);

  check_slots(p);
  if (o.command == Command::cache && store_traits(o.cache).in_redis)
    check_redis_store(p, getenv);
  else
    choose_backend(p, getenv);
  if (o.backend == Backend::file &&
      (o.command == Command::acquire || o.command == Command::release || o.command == Command::extend)) {
    usage(Msg::usage_file_subcommand, {{"command", subcommands[static_cast<int>(o.command)]}});
  }
  return std::move(o);
}

} // namespace bufferlock
