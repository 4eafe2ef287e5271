#include "cli.hpp"

#include "messages.hpp"

#include <algorithm>
#include <array>
#include <optional>

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
  close,
  no_fork,
  shell_command,
  verbose,
  quiet,
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
  on_lost,
  kill_after,
  // cache only
  cache_dir,
  max_age,
  stale,
  background,
  stale_if_error,
  drop,
  gc,
};

enum class Arity { flag, value };
enum class Scope { any, redis, cache };

struct OptionSpec {
  Opt id;
  char short_name; // 0 = none
  std::array<std::string_view, 3> long_names;
  Arity arity;
  Scope scope;
};

constexpr std::array<OptionSpec, 34> option_table = {{
    {Opt::dir, 'd', {"dir"}, Arity::value, Scope::any},
    {Opt::redis, 'r', {"redis"}, Arity::value, Scope::any},
    {Opt::nonblock, 'n', {"nonblock", "nb"}, Arity::flag, Scope::any},
    {Opt::wait, 'w', {"wait", "timeout"}, Arity::value, Scope::any},
    {Opt::busy_exit, 'E', {"busy-exit", "conflict-exit-code"}, Arity::value, Scope::any},
    {Opt::error_exit, 0, {"error-exit"}, Arity::value, Scope::any},
    {Opt::fail_open, 0, {"fail-open"}, Arity::flag, Scope::any},
    {Opt::shared, 's', {"shared"}, Arity::flag, Scope::any},
    {Opt::close, 'o', {"close"}, Arity::flag, Scope::any},
    {Opt::no_fork, 'F', {"no-fork"}, Arity::flag, Scope::any},
    {Opt::shell_command, 'c', {"command"}, Arity::value, Scope::any},
    {Opt::verbose, 'v', {"verbose"}, Arity::flag, Scope::any},
    {Opt::quiet, 'q', {"quiet"}, Arity::flag, Scope::any},
    {Opt::help, 'h', {"help"}, Arity::flag, Scope::any},
    {Opt::version, 'V', {"version"}, Arity::flag, Scope::any},
    {Opt::messages, 0, {"messages"}, Arity::value, Scope::any},
    {Opt::list_messages, 0, {"list-messages"}, Arity::flag, Scope::any},
    {Opt::ttl, 0, {"ttl"}, Arity::value, Scope::redis},
    {Opt::key_prefix, 0, {"namespace"}, Arity::value, Scope::redis},
    {Opt::hash_tag, 0, {"hash-tag"}, Arity::flag, Scope::redis},
    {Opt::connect_timeout, 0, {"connect-timeout"}, Arity::value, Scope::redis},
    {Opt::io_timeout, 0, {"io-timeout"}, Arity::value, Scope::redis},
    {Opt::step, 0, {"step"}, Arity::value, Scope::redis},
    {Opt::ratio, 0, {"ratio"}, Arity::value, Scope::redis},
    {Opt::max_step, 0, {"max-step"}, Arity::value, Scope::redis},
    {Opt::on_lost, 0, {"on-lost"}, Arity::value, Scope::redis},
    {Opt::kill_after, 0, {"kill-after"}, Arity::value, Scope::redis},
    {Opt::cache_dir, 0, {"cache-dir"}, Arity::value, Scope::cache},
    {Opt::max_age, 0, {"max-age"}, Arity::value, Scope::cache},
    {Opt::stale, 0, {"stale"}, Arity::value, Scope::cache},
    {Opt::background, 0, {"background"}, Arity::flag, Scope::cache},
    {Opt::stale_if_error, 0, {"stale-if-error"}, Arity::flag, Scope::cache},
    {Opt::drop, 0, {"drop"}, Arity::flag, Scope::cache},
    {Opt::gc, 0, {"gc"}, Arity::flag, Scope::cache},
}};

// In the order of the Command enumerators they stand for.
constexpr std::array<std::string_view, 6> subcommands = {"run",     "cache",   "status",
                                                         "acquire", "release", "extend"};

// The --messages file named so far, for UsageError (see there).
thread_local std::string messages_file_seen;

[[noreturn]] void usage(Msg m, std::initializer_list<Placeholder> values = {}) {
  MessageArgs args;
  for (const auto& p : values)
    args.emplace_back(p.name, p.value);
  throw UsageError(m, std::move(args), messages_file_seen);
}

const OptionSpec* find_long(std::string_view name) {
  for (const auto& spec : option_table)
    for (auto n : spec.long_names)
      if (!n.empty() && n == name) return &spec;
  return nullptr;
}

const OptionSpec* find_short(char c) {
  for (const auto& spec : option_table)
    if (spec.short_name != 0 && spec.short_name == c) return &spec;
  return nullptr;
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

int exit_status_value(std::string_view option, std::string_view text) {
  int v = 0;
  bool ok = !text.empty() && text.size() <= 3;
  for (char c : text) {
    if (c < '0' || c > '9')
      ok = false;
    else
      v = v * 10 + (c - '0');
  }
  if (!ok || v > 255) usage(Msg::usage_bad_exit_status, {{"option", option}, {"value", text}});
  return v;
}

// Everything the command line says, before the environment fills the gaps.
struct Parsed {
  Options opts;
  std::optional<std::string> dir;
  std::optional<std::string> redis_url;
  std::optional<Nanos> wait;
  std::optional<std::string> shell_before_key;
  std::string first_redis_option; // as typed, for the "not with the file backend" error
  bool no_fork = false;
  bool have_key = false;
  std::array<bool, option_table.size()> given{}; // on the command line
};

void apply(Parsed& p, const OptionSpec& spec, std::string_view typed, std::string_view value) {
  Options& o = p.opts;
  p.given[static_cast<std::size_t>(&spec - option_table.data())] = true;
  if (spec.scope == Scope::redis && p.first_redis_option.empty()) p.first_redis_option = typed;
  if (spec.scope == Scope::cache && o.command != Command::cache)
    usage(Msg::usage_cache_option, {{"option", typed}});
  switch (spec.id) {
  case Opt::dir:
    if (value.empty()) usage(Msg::usage_empty_dir);
    p.dir = std::string(value);
    break;
  case Opt::redis: p.redis_url = std::string(value); break;
  case Opt::nonblock: p.wait = Nanos(0); break;
  case Opt::wait: p.wait = duration_value(typed, value, AllowInfinite::yes, Msg::usage_bad_wait); break;
  case Opt::busy_exit: o.busy_exit = exit_status_value(typed, value); break;
  case Opt::error_exit: o.error_exit = exit_status_value(typed, value); break;
  case Opt::fail_open: o.fail_open = true; break;
  case Opt::shared: o.shared = true; break;
  case Opt::close: o.close = true; break;
  case Opt::no_fork: p.no_fork = true; break;
  case Opt::shell_command: p.shell_before_key = std::string(value); break;
  case Opt::verbose: o.verbosity = diag::Verbosity::verbose; break;
  case Opt::quiet: o.verbosity = diag::Verbosity::quiet; break;
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

// Reads options up to and including KEY; returns the index after KEY.
int parse_options(Parsed& p, int argc, const char* const* argv, int i, bool explicit_command) {
  while (i < argc) {
    const std::string_view arg = argv[i];
    if (arg == "--") {
      ++i;
      if (i < argc) {
        p.opts.key = argv[i++];
        p.have_key = true;
      }
      return i;
    }
    if (arg.size() > 2 && arg.substr(0, 2) == "--") {
      const std::string_view body = arg.substr(2);
      const std::size_t eq = body.find('=');
      const std::string_view name = body.substr(0, eq);
      const OptionSpec* spec = find_long(name);
      const std::string typed = "--" + std::string(name);
      if (!spec) usage(Msg::usage_unknown_option, {{"option", typed}});
      if (spec->arity == Arity::flag) {
        if (eq != std::string_view::npos) usage(Msg::usage_unexpected_value, {{"option", typed}});
        apply(p, *spec, typed, {});
      } else if (eq != std::string_view::npos) {
        apply(p, *spec, typed, body.substr(eq + 1));
      } else {
        if (i + 1 >= argc) usage(Msg::usage_missing_value, {{"option", typed}});
        apply(p, *spec, typed, argv[++i]);
      }
      ++i;
      continue;
    }
    if (arg.size() > 1 && arg[0] == '-') {
      // A cluster of short options, getopt style: -nv, -w5, -dDIR.
      for (std::size_t j = 1; j < arg.size(); ++j) {
        const OptionSpec* spec = find_short(arg[j]);
        const std::string typed = std::string("-") + arg[j];
        if (!spec) usage(Msg::usage_unknown_option, {{"option", typed}});
        if (spec->arity == Arity::flag) {
          apply(p, *spec, typed, {});
          continue;
        }
        if (j + 1 < arg.size()) {
          apply(p, *spec, typed, arg.substr(j + 1));
        } else {
          if (i + 1 >= argc) usage(Msg::usage_missing_value, {{"option", typed}});
          apply(p, *spec, typed, argv[++i]);
        }
        break;
      }
      ++i;
      continue;
    }
    // The first word that is not an option is KEY.
    if (!explicit_command && is_subcommand(arg))
      usage(Msg::usage_key_is_subcommand, {{"key", display_key(arg)}});
    p.opts.key = std::string(arg);
    p.have_key = true;
    return i + 1;
  }
  return i;
}

// The command after KEY: `-- CMD...`, `-c STRING`, or CMD... verbatim.
void parse_command_words(Parsed& p, int argc, const char* const* argv, int i) {
  Options& o = p.opts;
  std::optional<std::string> shell = p.shell_before_key;
  if (i < argc) {
    const std::string_view first = argv[i];
    if (first == "--") {
      ++i;
    } else if (first == "-c" || first == "--command" || first.starts_with("--command=")) {
      const bool attached = first.starts_with("--command=");
      const int words = argc - i - (attached ? 1 : 2);
      if (words != 0 || (!attached && i + 1 >= argc))
        usage(Msg::usage_shell_one_word, {{"option", attached ? "--command" : first}});
      if (shell) usage(Msg::usage_command_twice);
      shell = attached ? std::string(first.substr(10)) : std::string(argv[i + 1]);
      i = argc;
    }
  }
  if (i < argc && shell) usage(Msg::usage_command_twice);
  if (shell) {
    o.argv = {"/bin/sh", "-c", *shell};
  } else {
    o.argv.assign(argv + i, argv + argc);
    if (o.argv.empty()) usage(Msg::usage_missing_command);
  }
}

// Redis options that the environment can set (SPEC §4).
constexpr std::array<std::pair<Opt, const char*>, 6> redis_env = {{
    {Opt::ttl, "BUFFERLOCK_TTL"},
    {Opt::key_prefix, "BUFFERLOCK_NAMESPACE"},
    {Opt::connect_timeout, "BUFFERLOCK_CONNECT_TIMEOUT"},
    {Opt::io_timeout, "BUFFERLOCK_IO_TIMEOUT"},
    {Opt::on_lost, "BUFFERLOCK_ON_LOST"},
    {Opt::kill_after, "BUFFERLOCK_KILL_AFTER"},
}};

const char* env_value(const EnvLookup& getenv, const char* name) {
  const char* v = getenv(name);
  return (v && *v) ? v : nullptr; // an empty variable counts as unset
}

void choose_backend(Parsed& p, const EnvLookup& getenv) {
  Options& o = p.opts;
  if (p.dir && p.redis_url) usage(Msg::usage_both_backends);
  if (!p.dir && !p.redis_url) {
    const char* env_dir = env_value(getenv, "BUFFERLOCK_DIR");
    const char* env_redis = env_value(getenv, "BUFFERLOCK_REDIS");
    if (env_dir && env_redis) usage(Msg::usage_both_backend_env);
    if (env_dir) p.dir = env_dir;
    if (env_redis) p.redis_url = env_redis;
  }
  if (p.redis_url) {
    o.backend = Backend::redis;
    auto parsed = parse_redis_url(*p.redis_url);
    if (auto* e = std::get_if<UrlError>(&parsed))
      usage(Msg::usage_bad_redis_url, {{"server", redact_url(*p.redis_url)}, {"error", e->reason}});
    o.redis.url = std::get<RedisUrl>(parsed);
    o.redis.password = o.redis.url.password;
    if (!o.redis.password) {
      if (const char* pw = env_value(getenv, "BUFFERLOCK_REDIS_PASSWORD"))
        o.redis.password = pw;
      else if (const char* cli_pw = env_value(getenv, "REDISCLI_AUTH"))
        o.redis.password = cli_pw;
    }
    if (o.shared) usage(Msg::usage_shared_with_redis);
    // Environment equivalents of the redis options the command line did not give.
    for (const auto& [id, name] : redis_env) {
      const auto& spec = *std::find_if(option_table.begin(), option_table.end(),
                                       [id = id](const OptionSpec& s) { return s.id == id; });
      if (p.given[static_cast<std::size_t>(&spec - option_table.data())]) continue;
      if (const char* v = env_value(getenv, name)) apply(p, spec, name, v);
    }
  } else {
    o.backend = Backend::file;
    o.dir = p.dir.value_or("");
    if (!p.first_redis_option.empty())
      usage(Msg::usage_redis_option_with_file, {{"option", p.first_redis_option}});
  }
  if (p.wait) {
    o.wait = *p.wait;
  } else if (const char* env_wait = env_value(getenv, "BUFFERLOCK_WAIT")) {
    auto d = parse_duration(env_wait, AllowInfinite::yes);
    if (!d) usage(Msg::usage_bad_env, {{"option", "BUFFERLOCK_WAIT"}, {"value", env_wait}});
    o.wait = *d;
  } else if (o.command == Command::cache) {
    o.wait = infinite_duration; // a cache miss waits for the builder (SPEC §8)
  }
}

} // namespace

bool is_subcommand(std::string_view word) {
  for (auto s : subcommands)
    if (s == word) return true;
  return false;
}

Options parse_command_line(int argc, const char* const* argv, const EnvLookup& getenv) {
  Parsed p;
  const char* env_messages = env_value(getenv, "BUFFERLOCK_MESSAGES");
  messages_file_seen = env_messages ? env_messages : "";
  p.opts.messages_file = messages_file_seen;
  int i = 1;
  bool explicit_command = false;
  if (argc > 1 && is_subcommand(argv[1])) {
    // `subcommands` lists them in the order of Command.
    const auto* it = std::find(subcommands.begin(), subcommands.end(), std::string_view(argv[1]));
    p.opts.command = static_cast<Command>(it - subcommands.begin());
    explicit_command = true;
    i = 2;
  }
  i = parse_options(p, argc, argv, i, explicit_command);
  Options& o = p.opts;
  if (o.command == Command::help || o.command == Command::version || o.command == Command::list_messages)
    return o;
  if (o.command == Command::cache) {
    if (o.cache.dir.empty())
      if (const char* d = env_value(getenv, "BUFFERLOCK_CACHE_DIR")) o.cache.dir = d;
    const CacheSettings& c = o.cache;
    if (c.drop && c.gc) usage(Msg::usage_drop_and_gc);
    if (c.stale && !c.max_age)
      usage(Msg::usage_option_needs, {{"option", "--stale"}, {"value", "--max-age"}});
    if (c.background && !c.stale)
      usage(Msg::usage_option_needs, {{"option", "--background"}, {"value", "--stale"}});
    if (c.gc) {
      if (p.have_key) usage(Msg::usage_extra_argument, {{"value", o.key}});
      return o;
    }
  }
  if (!p.have_key) usage(Msg::lock_key_undefined);

  switch (o.command) {
  case Command::cache:
    if (o.cache.drop) {
      if (i < argc) usage(Msg::usage_extra_argument, {{"value", argv[i]}});
      break;
    }
    parse_command_words(p, argc, argv, i);
    break;
  case Command::run: parse_command_words(p, argc, argv, i); break;
  case Command::status:
  case Command::acquire:
    if (i < argc) usage(Msg::usage_extra_argument, {{"value", argv[i]}});
    break;
  case Command::release:
  case Command::extend:
    if (i >= argc) usage(Msg::usage_missing_value, {{"option", "TOKEN"}});
    o.token = argv[i++];
    if (i < argc) usage(Msg::usage_extra_argument, {{"value", argv[i]}});
    break;
  case Command::help:
  case Command::version:
  case Command::list_messages: break;
  }
  if (p.shell_before_key && o.command != Command::run && o.command != Command::cache)
    usage(Msg::usage_extra_argument, {{"value", "-c"}});
  if (o.close && p.no_fork) usage(Msg::usage_close_and_no_fork);

  choose_backend(p, getenv);
  if (o.backend == Backend::file &&
      (o.command == Command::acquire || o.command == Command::release || o.command == Command::extend)) {
    usage(Msg::usage_file_subcommand, {{"command", subcommands[static_cast<int>(o.command)]}});
  }
  return o;
}

} // namespace bufferlock
