// The whole command line (SPEC §2, §10) through the real parser: the input
// is split at NUL bytes into argv words; after an empty word, the rest are
// NAME=VALUE environment variables. Anything wrong must be a UsageError (one
// line, status 64), never another exception or a crash; and the same as
// with every option declared to CLI11 (the pre-scan finds what it names).
#include "cli.hpp"
#include "fuzz.hpp"

#include <map>
#include <optional>
#include <string>

using namespace bufferlock;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input = fuzz::as_text(data, size);
  std::vector<std::string> words{"bufferlock"};
  std::map<std::string, std::string, std::less<>> env;
  bool in_env = false;
  std::size_t pos = 0;
  while (pos <= input.size()) {
    std::size_t end = input.find('\0', pos);
    if (end == std::string_view::npos) end = input.size();
    const std::string_view word = input.substr(pos, end - pos);
    pos = end + 1;
    if (!in_env && word.empty() && pos <= input.size()) {
      in_env = true;
    } else if (in_env) {
      const auto eq = word.find('=');
      if (eq != std::string_view::npos) env[std::string(word.substr(0, eq))] = std::string(word.substr(eq + 1));
    } else {
      words.emplace_back(word);
    }
  }
  std::vector<const char*> argv;
  for (const auto& w : words)
    argv.push_back(w.c_str());
  argv.push_back(nullptr);
  const EnvLookup getenv = [&env](const char* name) -> const char* {
    const auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  // The parse a run does (CLI11 given the options the pre-scan found) must
  // come out as the one with every option declared, errors included.
  std::optional<Options> parsed, reference;
  std::string error, reference_error;
  try {
    parsed = parse_command_line(static_cast<int>(words.size()), argv.data(), getenv);
    const Options& o = *parsed;
    if (o.command == Command::help) (void)help_text(o.help_topic);
    if (o.command == Command::run || o.command == Command::cache)
      fuzz::check(!o.argv.empty() || o.cache.drop || o.cache.gc, "a run without a command");
  } catch (const UsageError& e) {
    error = e.what();
    fuzz::check(error.find('\n') == std::string::npos, "a usage error spans lines");
  }
  try {
    reference = parse_command_line(static_cast<int>(words.size()), argv.data(), getenv, Declare::every);
  } catch (const UsageError& e) {
    reference_error = e.what();
  }
  fuzz::check(parsed == reference && error == reference_error, "the pre-scan changed the parse");
  return 0;
}
