#include "app.hpp"

#include "cache/recipe.hpp"
#include "cli.hpp"
#include "exit_codes.hpp"
#include "help.hpp"
#include "lock/acquire.hpp"
#include "lock/file_list.hpp"
#include "lock/file_lock.hpp"
#include "lock/redis_list.hpp"
#include "lock/redis_lock.hpp"
#include "lock/status_format.hpp"
#include "messages.hpp"
#include "redis/tls.hpp"
#include "run/command.hpp"
#include "secrets.hpp"
#include "util/clock.hpp"
#include "util/env_index.hpp"
#include "util/io.hpp"
#include "util/sigmask.hpp"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <exception>
#include <memory>

namespace bufferlock {

namespace {

// Text for stdout (help, status, tokens): 0, or the error status when stdout is gone.
int write_stdout(std::string_view text) {
  return write_all(STDOUT_FILENO, text) ? exit_code::ok : exit_code::error;
}

void export_key(const Options& o) {
  scrub_lock_env(); // never pass on variables of a lock we do not hold
  if (o.key.size() <= max_env_key) ::setenv("BUFFERLOCK_KEY", o.key.c_str(), 1);
}

// The command, in place of this process when the lock can be inherited, else
// as a child while we hold (and maybe renew) the lock.
int run_command(const Options& o, Lock* lock) {
  const int fd = lock ? lock->inheritable_fd() : -1;
  if (o.backend == Backend::file && !o.close) {
    if (fd >= 0) {
      // the descriptors that must outlive exec (several with --also)
      for (int keep : lock->inheritable_fds())
        ::fcntl(keep, F_SETFD, 0);
      ::setenv("BUFFERLOCK_FD", std::to_string(fd).c_str(), 1);
    }
    return exec_command(o.argv);
  }
  const std::optional<Ticker> ticker = lock ? lock->keepalive() : std::nullopt;
  const int status = run_child(o.argv, ticker ? &*ticker : nullptr);
  if (lock) lock->release();
  return status;
}

int cmd_run(const Options& o) {
  const LockRequest request = lock_request(o);
  const std::unique_ptr<Lock> lock = make_lock(request, {});
  int exit_status = o.error_exit;
  const Taken taken = take_lock(request, *lock, exit_status);
  if (taken == Taken::stop) return exit_status;
  export_key(o);
  if (taken == Taken::unlocked) {
    ::setenv("BUFFERLOCK_BACKEND", o.backend == Backend::file ? "file" : "redis", 1);
    return run_command(o, nullptr);
  }
  lock->export_env();
  export_slot_env(request, *lock);
  return run_command(o, lock.get());
}

int cmd_status(const Options& o) {
  const std::unique_ptr<Lock> lock = make_lock(lock_request(o), {});
  const LockStatus s = lock->status();
  if (s.state == LockState::error) {
    diag::error(s.error);
    return o.error_exit;
  }
  const bool held = s.state == LockState::held;
  const std::int64_t now = wall_clock_ns();
  const std::string out = o.json ? status_json(o.key, s.state, lock->place(), s.info, now)
                                 : (held ? "held" : "free") + status_fields(s.info, now) + "\n";
  if (held) {
    write_stdout(out);
    return o.busy_exit;
  }
  return write_stdout(out) == 0 ? exit_code::ok : o.error_exit;
}

int cmd_list(const Options& o) {
  std::optional<std::string> error;
  std::vector<ListedLock> locks;
  if (o.backend == Backend::redis) {
    // As for a lock (make_lock): a server gone away gives EPIPE, not death.
    block_sigpipe();
    locks = list_redis_locks(o.redis, error);
  } else {
    const std::string dir = o.dir.empty() ? default_lock_dir() : o.dir;
    locks = list_file_locks(dir, error);
  }
  if (error) {
    diag::error(*error);
    return o.error_exit;
  }
  const std::int64_t now = wall_clock_ns();
  return write_stdout(o.json ? list_json(locks, now) : list_text(locks, now));
}

int cmd_acquire(const Options& o) {
  const LockRequest request = lock_request(o);
  auto lock = make_lock(request, {});
  auto& redis = static_cast<RedisLock&>(*lock);
  int exit_status = o.error_exit;
  if (take_lock(request, redis, exit_status) != Taken::locked) return exit_status;
  if (write_stdout(redis.token() + "\n") != 0) {
    redis.release(); // nobody learnt the token: do not leave the lock behind
    return o.error_exit;
  }
  return exit_code::ok;
}

int cmd_release_or_extend(const Options& o) {
  auto lock = make_lock(lock_request(o), {});
  auto& redis = static_cast<RedisLock&>(*lock);
  if (o.token.empty()) throw UsageError(Msg::usage_bad_token, {{"value", o.token}}, o.messages_file);
  redis.use_token(o.token);
  const bool release = o.command == Command::release;
  auto result = redis.retry_within(o.wait, release ? &RedisLock::release_token : &RedisLock::extend_token);
  if (auto* e = std::get_if<RedisError>(&result)) {
    diag::error(message(release ? Msg::redis_unlock_failed : Msg::redis_renew_failed,
                        {{"server", redis.server()}, {"error", e->text}}));
    return o.error_exit;
  }
  if (std::get<bool>(result)) return exit_code::ok;
  if (release) {
    // Done as far as we are concerned, but whoever held it worked unguarded
    // for a while: say so (SPEC §7).
    diag::warn(
        message(Msg::redis_released_not_ours, {{"key", display_key(o.key)}, {"server", redis.server()}}));
    return exit_code::ok;
  }
  diag::debug_lazy([&] {
    return message(Msg::redis_lock_lost, {{"key", display_key(o.key)}, {"server", redis.server()}});
  });
  return o.busy_exit;
}

// OpenSSL is loaded here, once a run is known to talk TLS and before its
// first connection or any lock, not while parsing: a file it cannot use is
// still a usage error (SPEC §12), never a backend error that --fail-open
// would run past or a wait would retry.
void prepare_tls(const Options& o) {
  std::optional<TlsSetupError> e;
  if (o.backend == Backend::redis && uses_tls(o.redis)) e = tls_prepare(o.redis.tls);
  if (!e && o.command == Command::cache && !o.cache.store_ca.empty()) e = tls_check_ca(o.cache.store_ca);
  if (e) throw UsageError(Msg::usage_tls_setup, {{"error", e->text}}, o.messages_file);
}

} // namespace

int app_main(int argc, char** argv) {
  int error_exit = exit_code::error;
  try {
    // The option table has a variable for many options, most runs none:
    // environ is read once for them.
    const EnvIndex env("BUFFERLOCK_", environ);
    Options o = parse_command_line(argc, argv, {[&env](const char* name) { return env.get(name); }, &env.found()});
    prepare_tls(o); // as if parsing had judged the files: before anything else is said
    error_exit = o.error_exit;
    diag::set_verbosity(o.verbosity);
    if (!o.messages_file.empty()) {
      std::string why;
      if (!load_message_overrides(o.messages_file, why)) {
        diag::error(message(
            Msg::usage_hint,
            {{"error", message(Msg::usage_messages_file, {{"path", o.messages_file}, {"error", why}})}}));
        return exit_code::usage;
      }
    }
    protect_secrets(argc, argv, o);
    if (o.command == Command::run && !o.key.empty())
      suggest_subcommand_when_not_found(subcommand_near(o.key)); // `bufferlock cach k -- make`
    switch (o.command) {
    case Command::help: return write_stdout(help_text(o.help_topic));
    case Command::version: return write_stdout(version_text());
    case Command::list_messages: return write_stdout(list_messages());
    case Command::run: return cmd_run(o);
    case Command::status: return cmd_status(o);
    case Command::list: return cmd_list(o);
    case Command::acquire: return cmd_acquire(o);
    case Command::release:
    case Command::extend: return cmd_release_or_extend(o);
    case Command::cache: return cache_main(cache_request(std::move(o)));
    }
  } catch (const UsageError& e) {
    std::string ignored;
    if (!e.messages_file.empty()) load_message_overrides(e.messages_file, ignored);
    diag::error(message(Msg::usage_hint, {{"error", message(e.msg, e.args)}}));
    return exit_code::usage;
  } catch (const std::exception& e) {
    diag::error(e.what());
    return error_exit;
  }
  return exit_code::error;
}

} // namespace bufferlock
