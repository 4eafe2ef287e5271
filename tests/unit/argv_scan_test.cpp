// The pre-scan that decides which options CLI11 is given: alone on a small
// table, against the real option table (every name, every spelling), and as
// the parser sees it: a parse declaring only the options found must come out
// exactly as one declaring every option, error messages included.
#include "argv_scan.hpp"
#include "cli.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <map>
#include <random>
#include <string>
#include <variant>
#include <vector>

using namespace bufferlock;

namespace {

using Words = std::vector<std::string>;

// A table in CLI11's form, as the real one is.
constexpr std::array<ScanOption, 5> small_table = {{
    {"-n,--nonblock,--nb", false},
    {"-w,--wait,--timeout", true},
    {"-v,--verbose", false},
    {"--dir", true},
    {"", false}, // not accepted here
}};

// The names (small_table's) that `words` names before KEY.
std::vector<std::string_view> scanned(const Words& words) {
  std::vector<const char*> argv;
  for (const auto& w : words)
    argv.push_back(w.c_str());
  std::array<bool, small_table.size()> named{};
  scan_options(small_table, argv, named);
  std::vector<std::string_view> out;
  for (std::size_t i = 0; i < named.size(); ++i)
    if (named[i]) out.push_back(small_table[i].names);
  return out;
}

using Names = std::vector<std::string_view>;
constexpr std::string_view n = "-n,--nonblock,--nb", w = "-w,--wait,--timeout", v = "-v,--verbose",
                           dir = "--dir";

// The environment of a parse: variables by name.
using Env = std::map<std::string, std::string>;

std::vector<const char*> argv_of(const Words& words) {
  std::vector<const char*> argv{"bufferlock"};
  for (const auto& word : words)
    argv.push_back(word.c_str());
  return argv;
}

// A parse's result: the options, or the usage error's text.
using Outcome = std::variant<Options, std::string>;

Outcome outcome(const Words& words, const Env& env, Declare declare) {
  const std::vector<const char*> argv = argv_of(words);
  try {
    const EnvLookup getenv = [&env](const char* name) -> const char* {
      const auto it = env.find(name);
      return it == env.end() ? nullptr : it->second.c_str();
    };
    return parse_command_line(static_cast<int>(argv.size()), argv.data(), getenv, declare);
  } catch (const UsageError& e) {
    return std::string(e.what());
  }
}

std::string shown(const Words& words) {
  std::string out;
  for (const auto& word : words)
    out += "'" + word + "' ";
  return out;
}

void expect_same_parse(const Words& words, const Env& env = {}) {
  const Outcome named = outcome(words, env, Declare::named);
  const Outcome every = outcome(words, env, Declare::every);
  EXPECT_EQ(named.index(), every.index()) << shown(words);
  if (named.index() != every.index()) return;
  if (const auto* text = std::get_if<std::string>(&named))
    EXPECT_EQ(*text, std::get<std::string>(every)) << shown(words);
  else
    EXPECT_TRUE(std::get<Options>(named) == std::get<Options>(every)) << shown(words);
}

bool declares(const Words& words, std::string_view names) {
  const std::vector<const char*> argv = argv_of(words);
  const auto found = options_declared(static_cast<int>(argv.size()), argv.data());
  return std::find(found.begin(), found.end(), names) != found.end();
}

// Each name of an option ("-w", "--wait", "--timeout").
std::vector<std::string> names_of(std::string_view names) {
  std::vector<std::string> out;
  while (!names.empty()) {
    const std::size_t comma = names.find(',');
    out.emplace_back(names.substr(0, comma));
    names = comma == std::string_view::npos ? std::string_view{} : names.substr(comma + 1);
  }
  return out;
}

// Every way a command line may spell `name` with `value` (flags: without).
std::vector<Words> spellings(const std::string& name, bool takes_value, const std::string& value) {
  std::vector<Words> out;
  const bool is_short = name.size() == 2;
  if (!takes_value) {
    out.push_back({name});
    if (is_short) {
      out.push_back({"-q" + name.substr(1)}); // after another flag in a bundle
      out.push_back({name + "q"});            // before one
    }
    return out;
  }
  out.push_back({name, value});
  if (is_short) {
    out.push_back({name + value});
    out.push_back({"-q" + name.substr(1), value});
    out.push_back({"-q" + name.substr(1) + value});
  } else {
    out.push_back({name + "=" + value});
  }
  return out;
}

} // namespace

TEST(ArgvScan, LongNamesWithAndWithoutValues) {
  EXPECT_EQ(scanned({"--nonblock", "k"}), (Names{n}));
  EXPECT_EQ(scanned({"--nb", "--timeout", "5", "k"}), (Names{n, w}));
  EXPECT_EQ(scanned({"--wait=5", "--dir", "D", "k"}), (Names{w, dir}));
  EXPECT_EQ(scanned({"--dir=", "k", "--wait", "5"}),
            (Names{dir})); // "--dir=": an empty value, not the next word
}

TEST(ArgvScan, ShortBundlesAndAttachedValues) {
  EXPECT_EQ(scanned({"-nv", "k"}), (Names{n, v}));
  EXPECT_EQ(scanned({"-vw5", "k"}), (Names{w, v}));
  EXPECT_EQ(scanned({"-w5v", "k"}), (Names{w})); // "5v" is -w's value
  EXPECT_EQ(scanned({"-vw", "5", "-n", "k"}), (Names{n, w, v}));
}

TEST(ArgvScan, AValueIsTakenWhateverItLooksLike) {
  EXPECT_EQ(scanned({"-w", "-v", "k"}), (Names{w}));
  EXPECT_EQ(scanned({"--dir", "--nonblock", "k"}), (Names{dir}));
  EXPECT_EQ(scanned({"--wait", "--", "-n", "k"}), (Names{n, w})); // "--" was the value
}

TEST(ArgvScan, DashDashAndKeyEndTheOptions) {
  EXPECT_EQ(scanned({"-n", "--", "-v", "true"}), (Names{n}));
  EXPECT_EQ(scanned({"--", "-odd-key", "--wait", "5"}), (Names{}));
  EXPECT_EQ(scanned({"k", "-v", "--dir", "x"}), (Names{}));
  EXPECT_EQ(scanned({"-n", "-1", "-v"}), (Names{n})); // an unknown digit is a word (KEY)
  EXPECT_EQ(scanned({"-n", "-", "-v"}), (Names{n}));
  EXPECT_EQ(scanned({"-n", "", "-v"}), (Names{n}));
  EXPECT_EQ(scanned({"-n", "---x", "-v"}), (Names{n}));
}

TEST(ArgvScan, UnknownOptionsAreSkippedAloneAsCli11Does) {
  EXPECT_EQ(scanned({"--bogus", "-v", "k"}), (Names{v}));
  EXPECT_EQ(scanned({"-Zn", "-v", "k"}), (Names{v})); // the whole word is left, "n" too
  EXPECT_EQ(scanned({"--bogus=1", "--dir", "D", "k"}), (Names{dir}));
  EXPECT_EQ(scanned({"--bogus", "x", "-v"}), (Names{}));
}

TEST(ArgvScan, ABundlesRestIsReadAsANewWord) {
  EXPECT_EQ(scanned({"-n-dir", "D", "k"}), (Names{n, dir})); // CLI11 reads "--dir"
  EXPECT_EQ(scanned({"-n5", "-v"}), (Names{n}));             // "-5": a word
  EXPECT_EQ(scanned({"-n-", "-v"}), (Names{n}));             // "--": the end of options
}

TEST(ArgvScan, OptionsNotAcceptedHereAreNotFound) {
  EXPECT_FALSE(declares({"--cache-dir", "C", "k", "true"}, "--cache-dir"));
  EXPECT_TRUE(declares({"cache", "--cache-dir", "C", "k", "true"}, "--cache-dir"));
  EXPECT_FALSE(declares({"k", "-v", "true"}, "-v,--verbose"));
  EXPECT_TRUE(declares({"-dD", "-nv", "k", "true"}, "-v,--verbose"));
}

// Fails when an option is added to the table that the scan cannot find in
// one of its spellings, or finds but reads otherwise than CLI11.
TEST(ArgvScan, EveryOptionOfTheTableEverySpelling) {
  // Plain redis://: the TLS set-up is prepared once a process, by its first user.
  Env redis;
  redis["BUFFERLOCK_REDIS"] = "redis://127.0.0.1:1";
  std::size_t checked = 0;
  for (const Command command : {Command::run, Command::cache}) {
    const Words sub = command == Command::cache ? Words{"cache"} : Words{};
    const std::vector<ScanOption> table = accepted_options(command);
    EXPECT_GE(table.size(), command == Command::cache ? 40u : 30u);
    for (const ScanOption& option : table) {
      for (const std::string& name : names_of(option.names)) {
        // Plain values, and values that look like options.
        for (const std::string value : {"1", "-v", "--quiet", "--"}) {
          for (const Words& spelled : spellings(name, option.takes_value, value)) {
            Words words = sub;
            words.insert(words.end(), spelled.begin(), spelled.end());
            words.insert(words.end(), {"k", "--", "true"});
            EXPECT_TRUE(declares(words, option.names)) << shown(words);
            expect_same_parse(words);
            expect_same_parse(words, redis);
            ++checked;
          }
          if (!option.takes_value) break;
        }
      }
    }
  }
  EXPECT_GT(checked, 200u);
}

TEST(ArgvScan, AKeyThatStartsWithADashAfterDashDash) {
  EXPECT_FALSE(declares({"-n", "--", "-v", "true"}, "-v,--verbose"));
  expect_same_parse({"-n", "--", "-v", "true"});
  expect_same_parse({"--", "--wait", "true"});
  expect_same_parse({"-w", "--", "--", "-k", "true"});
}

// The parse declaring only what the scan found against the one declaring
// every option, over command lines made of option spellings, values, KEYs
// and oddities: results and error messages must be the same.
TEST(ArgvScan, SameParseAsWithEveryOptionDeclared) {
  // clang-format off
  const std::vector<std::string> vocabulary = {
      "-n", "-v", "-q", "-s", "-o", "-F", "-nv", "-vw5", "-w", "5", "0.5", "inf", "-w5", "--wait=2",
      "--timeout", "--nb", "-d", "D", "-dD", "--dir=", "--dir", "-r", "redis://127.0.0.1:1", "--redis=x",
      "--ttl", "10", "--ttl=0", "--namespace", "--hash-tag", "--on-lost=term", "--slots", "3", "--also",
      "k2", "-E", "3", "-E3", "--error-exit=4", "--fail-open", "-c", "echo", "--command=x", "--cache-dir",
      "C", "--max-age=5", "--stale", "--background", "--drop", "--gc", "--list", "--store", "redis",
      "--depends", "P", "--output", "--sign-key", "--compress", "--force", "--keep-stderr", "--max-entry=1K", "--tls-ca", "F", "--bogus", "-Z",
      "-Zn", "-1", "-n1", "-n-dir", "-n-", "-", "", "---x", "--close=yes", "--", "k", "true", "--help",
      "-h", "-V", "--list-messages", "--messages=", "run", "cache", "status", "list", "acquire", "release"};
  // clang-format on
  Env redis, waits;
  redis["BUFFERLOCK_REDIS"] = "redis://127.0.0.1:1";
  waits["BUFFERLOCK_WAIT"] = "3";
  waits["BUFFERLOCK_TTL"] = "5";
  const std::vector<Env> envs = {Env{}, redis, waits};
  std::mt19937 random(22); // fixed: the same lines on every run
  for (int i = 0; i < 1500; ++i) {
    Words words;
    const auto length = random() % 8;
    for (std::size_t j = 0; j < length; ++j)
      words.push_back(vocabulary[random() % vocabulary.size()]);
    expect_same_parse(words, envs[random() % envs.size()]);
  }
}
