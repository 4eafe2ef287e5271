// The catalogue of diagnostics: each has a stable key (SPEC §11) and a
// default text with %{placeholders}. Keys from the seeds are kept as named.
#pragma once

#include "util/diag.hpp"

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bufferlock {

// X(key, default text)
#define BUFFERLOCK_MESSAGES(X)                                                                               \
  X(usage_unknown_option, "unknown option '%{option}'")                                                      \
  X(usage_missing_value, "option '%{option}' needs a value")                                                 \
  X(usage_unexpected_value, "option '%{option}' takes no value")                                             \
  X(usage_bad_duration,                                                                                      \
    "invalid duration '%{value}' for %{option}: expected seconds such as 5, 0.25 or 250ms")                  \
  X(usage_bad_wait,                                                                                          \
    "invalid duration '%{value}' for %{option}: expected seconds such as 5, 0.25, 250ms or inf")             \
  X(usage_bad_exit_status, "invalid exit status '%{value}' for %{option}: expected 0 to 255")                \
  X(lock_key_undefined, "missing KEY")                                                                       \
  X(usage_missing_command, "missing command after KEY")                                                      \
  X(usage_bad_command_line, "the command line could not be read")                                            \
  X(usage_extra_argument, "unexpected argument '%{value}'")                                                  \
  X(usage_command_twice, "both -c and a command after KEY were given")                                       \
  X(usage_option_after_key, "option '%{option}' after KEY '%{key}': options go before KEY")                  \
  X(usage_shell_one_word, "%{option} takes exactly one shell command")                                       \
  X(usage_key_is_subcommand,                                                                                 \
    "KEY '%{key}' is also a subcommand: use 'bufferlock run %{key} ...' or put '--' before it")              \
  X(usage_both_backends, "--dir and --redis cannot be used together")                                        \
  X(usage_both_backend_env,                                                                                  \
    "both BUFFERLOCK_DIR and BUFFERLOCK_REDIS are set: choose one with --dir or --redis")                    \
  X(usage_redis_option_with_file, "%{option} is a redis option; the file backend has no use for it")         \
  X(usage_shared_with_redis, "--shared works only with the file backend")                                    \
  X(usage_close_and_no_fork, "--close and --no-fork cannot be used together")                                \
  X(usage_file_subcommand,                                                                                   \
    "'%{command}' needs the redis backend: a file lock lives only as long as a process holds it")            \
  X(usage_empty_dir, "--dir needs a directory name")                                                         \
  X(usage_bad_env, "invalid %{option}='%{value}'")                                                           \
  X(usage_bad_redis_url, "invalid redis URL '%{server}': %{error}")                                          \
  X(usage_redis_twice, "the Redis server %{server} is given twice: a quorum needs independent servers")      \
  X(usage_quorum_sentinel, "%{server}: a quorum is made of independent masters, not of sentinel URLs")       \
  X(usage_tls_setup, "TLS: %{error}")                                                                        \
  X(usage_bad_slots, "invalid %{option} '%{value}': expected a whole number of slots from 1 to 1000")        \
  X(usage_slots_shared, "--slots cannot be used with --shared: a shared lock already has no limit")          \
  X(usage_option_not_here, "%{option} does not apply to 'bufferlock %{command}'")                            \
  X(usage_bad_token, "missing TOKEN: give the token that 'bufferlock acquire' printed")                      \
  X(redis_ttl_invalid,                                                                                       \
    "invalid %{option} '%{value}': expected seconds > 0 such as 60, 2.5 or 500ms (at least 1 ms)")           \
  X(redis_namespace_invalid, "%{option} needs a non-empty key prefix")                                       \
  X(usage_cache_option, "%{option} works only with 'bufferlock cache'")                                      \
  X(usage_drop_and_gc, "--drop and --gc cannot be used together")                                            \
  X(usage_read_only_with,                                                                                    \
    "%{option} cannot be used with %{value}: a read-only call changes nothing in the store")                 \
  X(usage_bad_size,                                                                                          \
    "invalid size '%{value}' for %{option}: expected bytes > 0 with an optional K, M or G, such as 64M")     \
  X(usage_bad_depends, "invalid %{option}: %{error}")                                                        \
  X(usage_bad_store, "invalid %{option} '%{value}': expected file, redis, an http:// or https:// URL or s3://BUCKET/PREFIX")     \
  X(usage_bad_store_url, "invalid %{option} '%{value}': %{error}")                                            \
  X(usage_store_token_file, "cannot use --store-token-file %{path}: %{error}")                               \
  X(usage_store_servers, "--store redis needs exactly one Redis server, not %{count}")                       \
  X(usage_option_needs, "%{option} needs %{value}")                                                          \
  X(usage_bad_format, "invalid %{option} '%{value}': expected text, json, markdown or prometheus")           \
  X(usage_kill_after_fit,                                                                                    \
    "%{option} %{value} does not fit in %{ttl} %{ttl_value} with --on-lost term: at most %{most} (the TTL "  \
    "less a renewal period of TTL/3, the drift allowance and two renewal attempts)")                         \
  X(usage_ttl_short_for_term,                                                                                \
    "%{ttl} %{value} is too short for --on-lost term: it must hold a renewal period of TTL/3, the drift "    \
    "allowance and two renewal attempts of %{timeouts} (%{attempt})")                   \
  X(usage_messages_file, "cannot read messages file %{path}: %{error}")                                      \
  X(usage_sign_key_file, "cannot use --sign-key %{path}: %{error}")                                          \
  X(messages_bad_line, "%{path}, line %{line}: expected 'key = text'; line ignored")                         \
  X(messages_unknown_key, "%{path}, line %{line}: unknown message key '%{key}'; line ignored")               \
  X(messages_unknown_placeholder,                                                                            \
    "%{path}, line %{line}: '%{key}' has no placeholder %{value}; default text kept")                        \
  X(usage_hint, "%{error} (see 'bufferlock --help')")                                                        \
  X(lock_dir_create_failed, "cannot create lock directory %{path}: %{error}")                                \
  X(lock_dir_unsafe, "refusing lock directory %{path}: %{error}")                                            \
  X(lock_dir_not_writable, "cannot create lock file %{path}: %{error}")                                      \
  X(lock_open_failed, "cannot open %{path}: %{error}")                                                       \
  X(lock_failed, "cannot lock %{path}: %{error}")                                                            \
  X(lock_fail_open, "%{error}; running the command without the lock (--fail-open)")                          \
  X(cache_lock_unreached, "%{error}; --fail-open would build without the lock")                              \
  X(lock_acquired, "acquired '%{key}' (%{path}) after %{seconds}s")                                          \
  X(lock_busy, "'%{key}' is busy")                                                                           \
  X(lock_busy_holder, "'%{key}' is busy (%{holder})")                                                        \
  X(lock_timeout, "gave up waiting for '%{key}' after %{seconds}s")                                          \
  X(lock_timeout_holder, "gave up waiting for '%{key}' after %{seconds}s (%{holder})")                       \
  X(lock_released, "released '%{key}'")                                                                      \
  X(exec_failed, "cannot run %{command}: %{error}")                                                          \
  X(exec_not_found_did_you_mean,                                                                             \
    "cannot run %{command}: %{error} (did you mean 'bufferlock %{subcommand}'?)")                            \
  X(fork_failed, "cannot start %{command}: %{error}")                                                        \
  X(status_failed, "cannot read the state of %{path}: %{error}")                                             \
  X(list_failed, "cannot list the locks in %{path}: %{error}")                                               \
  X(redis_lock_failed, "cannot take the lock: Redis at %{server}: %{error}")                                 \
  X(redis_wait_retrying, "cannot reach Redis at %{server}: %{error}; still trying (--wait inf)")             \
  X(redis_wait_retrying_unanswered,                                                                          \
    "cannot reach Redis at %{server}: %{error}; still trying, for up to %{seconds}s as it has not answered " \
    "in this run (--outage-allowance)")                                                                      \
  X(redis_never_answered, "%{error}; no answer in %{seconds}s of trying (--outage-allowance)")               \
  X(redis_unlock_failed, "cannot release the lock: Redis at %{server}: %{error}")                            \
  X(redis_renew_failed, "cannot renew the lock: Redis at %{server}: %{error}")                               \
  X(redis_renew_retrying,                                                                                    \
    "cannot renew the lock: Redis at %{server}: %{error}; retrying while the lock may still be ours")        \
  X(redis_status_failed, "cannot read the lock: Redis at %{server}: %{error}")                               \
  X(redis_lock_lost, "lost the lock '%{key}' on Redis at %{server}: it expired or another holder took it")   \
  X(redis_lock_lost_term, "lost the lock '%{key}' on Redis at %{server}; sending the command SIGTERM")       \
  X(redis_lock_lost_kill, "the command outlived --kill-after; sending it SIGKILL")                           \
  X(redis_lease_unconfirmed, "cannot renew the lock '%{key}' on Redis at %{server} in time: it may be lost") \
  X(redis_lease_unconfirmed_term,                                                                            \
    "cannot renew the lock '%{key}' on Redis at %{server} in time: it may be lost; sending the command "     \
    "SIGTERM")                                                                                               \
  X(redis_token_failed, "cannot make a lock token: %{error}")                                                \
  X(redis_released_not_ours,                                                                                 \
    "lost the lock '%{key}' on Redis at %{server}: at release it had expired or another holder had it")      \
  X(redis_password_hidden,                                                                                   \
    "a Redis password was on the command line, where ps(1) shows it to every user until bufferlock hides "   \
    "it; BUFFERLOCK_REDIS_PASSWORD or REDISCLI_AUTH keeps it off")                                           \
  X(store_password_hidden,                                                                                   \
    "a password of the http store was on the command line (--store URL), where ps(1) shows it to every "     \
    "user until bufferlock hides it; the URL in BUFFERLOCK_CACHE_STORE, or a bearer token from "             \
    "--store-token-file, keeps it off")                                                                      \
  X(key_file_exposed,                                                                                        \
    "private key %{path} is readable by group or others (mode %{value}); it should be its owner's alone "    \
    "(chmod 600)")                                                                                           \
  X(cache_entry_corrupt, "ignoring cache entry %{path}: %{error}; rebuilding it")                            \
  X(cache_store_failed, "output of '%{key}' not stored: %{path}: %{error}")                                  \
  X(cache_stats_failed, "cannot read or reset the statistics of %{server}: %{error}")                      \
  X(cache_drop_failed, "cannot remove cache entry %{path}: %{error}")                                        \
  X(cache_entry_too_large, "output of '%{key}' not stored: its stored size, %{stored} bytes, is over --max-entry (%{size} bytes)")   \
  X(cache_stale_served, "the rebuild of '%{key}' failed with status %{status}; serving the previous entry")  \
  X(cache_stale_unstored, "the new output of '%{key}' could not be stored; serving the previous entry")      \
  X(cache_stale_other_inputs,                                                                                \
    "the rebuild of '%{key}' failed with status %{status}; serving its newest entry, "                       \
    "built from other inputs")                                                                               \
  X(cache_warm_unusable, "no warm start for '%{key}': the newest entry of '%{from}': %{error}; building cold") \
  X(cache_warm_start, "cache '%{key}': warm start from '%{from}' (inputs %{inputs}, age %{age}s, from %{where})") \
  X(cache_inputs_unreadable, "cannot read %{path}, a dependency of '%{key}': %{error}")                      \
  X(cache_inputs_changed, "output of '%{key}' not stored: its dependencies changed during the build")       \
  X(cache_inputs_changed_at,                                                                                 \
    "output of '%{key}' not stored: its dependencies changed during the build (first: %{path})")            \
  X(cache_output_missing, "--output %{path} of '%{key}' is missing after the build; nothing stored")        \
  X(cache_output_refused, "ignoring the cache entry of '%{key}' (%{where}): its outputs: %{error}; rebuilding it") \
  X(cache_redis_entry_corrupt, "ignoring the cache entry of '%{key}' (%{server}): %{error}; rebuilding it")  \
  X(cache_redis_read_failed, "cannot read the cache entry of '%{key}' (%{server}): %{error}; rebuilding it") \
  X(cache_redis_store_failed, "output of '%{key}' not stored: Redis at %{server}: %{error}")                 \
  X(cache_redis_drop_failed, "cannot remove the cache entry of '%{key}': Redis at %{server}: %{error}")      \
  X(cache_redis_list_failed, "cannot list the cache entries: Redis at %{server}: %{error}")                  \
  X(cache_http_store_failed, "output of '%{key}' not stored: HTTP store at %{server}: %{error}")             \
  X(cache_http_drop_failed, "cannot remove the cache entry of '%{key}': HTTP store at %{server}: %{error}")  \
  X(cache_http_list_failed, "cannot list the cache entries: HTTP store at %{server}: %{error}")              \
  X(cache_http_cannot_list, "the HTTP store at %{server} cannot list its objects (PROPFIND: %{error}): --list, --drop and --gc need a server that answers WebDAV PROPFIND") \
  X(cache_http_credentials_refused, "the server refused the credentials (%{request}: %{error})")              \
  X(cache_http_credentials_needed, "the server wants credentials (%{request}: %{error}): user:password in the URL or --store-token-file") \
  X(cache_s3_store_failed, "output of '%{key}' not stored: S3 store %{server}: %{error}")                    \
  X(cache_s3_drop_failed, "cannot remove the cache entry of '%{key}': S3 store %{server}: %{error}")         \
  X(cache_s3_list_failed, "cannot list the cache entries: S3 store %{server}: %{error}")                     \
  X(cache_s3_upload_aborted, "S3 store %{server}: multipart upload of %{object} aborted (%{error})")          \
  X(cache_s3_settings, "S3 store %{server}: credentials from %{source}, region %{region}, endpoint %{endpoint}") \
  X(usage_s3_settings, "cannot use the S3 store %{server}: %{error}")                                        \
  X(cache_hit, "cache '%{key}': hit (age %{age}s, stored %{stored} bytes, from %{from})")                   \
  X(cache_built, "cache '%{key}': built and stored (build %{seconds}s, stored %{stored} bytes, in %{from})")  \
  X(cache_waited, "cache '%{key}': waited %{waited}s for another caller's build, served it (age %{age}s, "   \
    "stored %{stored} bytes, from %{from})")                                                                 \
  X(cache_served_stale, "cache '%{key}': served stale (age %{age}s, stored %{stored} bytes, from %{from}): %{why}") \
  X(cache_not_stored, "cache '%{key}': not stored (build %{seconds}s): %{why}")                              \
  X(cache_explain_miss, "miss for '%{key}': %{why}")                                                      \
  X(cache_explain_hit, "hit for '%{key}': age %{age}s, built on %{host}")                                    \
  X(cache_explain_stale, "stale for '%{key}': age %{age}s, --max-age %{max_age}s, --stale %{stale}s: %{what}") \
  X(cache_depends_missing, "--depends %{path}: %{error} (counted as missing)")                                \
  X(cache_dir_unusable, "cannot use the cache directory %{path} (its locks live there): %{error}")            \
  X(cache_removed, "removed '%{key}' (inputs %{inputs}, %{stored} bytes) from %{from}: %{why}")               \
  X(cache_gc_by_age, "%{server}: no record of use without -r: --gc takes each entry's build as its last use")  \
  X(cache_removed_file, "removed %{path}: %{why}")                                                            \
  X(cache_gc_done, "removed %{entries} entries and %{temps} temporary files from %{path}")                   \
  X(cache_gc_trimmed, "removed the %{entries} least recently used entries to bring %{path} under %{size} bytes")

enum class Msg {
#define BUFFERLOCK_MSG_ENUM(key, text) key,
  BUFFERLOCK_MESSAGES(BUFFERLOCK_MSG_ENUM)
#undef BUFFERLOCK_MSG_ENUM
};

using diag::Placeholder;
using MessageArgs = std::vector<std::pair<std::string, std::string>>;

// The stable key of a message, e.g. "lock_open_failed".
std::string_view message_key(Msg m);

// The message's text (overridden or default) with its placeholders filled in.
std::string message(Msg m, std::initializer_list<Placeholder> values = {});
std::string message(Msg m, const MessageArgs& values);

// Reads overrides from a file of lines "key = text" (# comments and blank
// lines allowed). Malformed lines, unknown keys and placeholders the message
// does not have are warnings naming the line; the default text stays. False,
// with `error`, when the file cannot be read.
bool load_message_overrides(const std::string& path, std::string& error);

// The same for the text of such a file, read already; `path` names it in warnings.
void apply_message_overrides(std::string_view text, const std::string& path);

// Every key with its default text, one "key = text" line each.
std::string list_messages();

// A KEY as messages show it: printable, and cut after 64 bytes.
std::string display_key(std::string_view key);

} // namespace bufferlock
