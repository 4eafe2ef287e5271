// What --exclude PATTERN leaves out of a --depends directory (SPEC §15):
// gitignore-style globs over the path of an entry relative to the directory
// given, its components separated by '/':
//   a pattern without a slash (`*.o`) matches a name at any depth;
//   a pattern with a slash (`a/*.c`, `/top`) is anchored to the directory;
//   a trailing slash (`build/`) matches directories only;
//   `**` as a whole component matches any number of components (`**/x`,
//   `a/**/b`; a trailing `a/**` everything inside a, not a itself);
//   elsewhere, each component is matched as fnmatch(3) matches a name
//   (`*`, `?`, `[...]`, backslash escapes; a leading dot is not special).
// A directory left out is not read at all, so nothing below it counts.
// There is no negation: a leading '!' is refused rather than taken literally.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bufferlock {

// Why `pattern` cannot be an --exclude PATTERN; nullopt when it can.
std::optional<std::string> bad_exclude_pattern(std::string_view pattern);

class Excludes {
public:
  // Adds a pattern that bad_exclude_pattern() accepts.
  void add_pattern(std::string_view pattern);
  // Adds the one entry at `rel` (relative, '/'-separated), whatever its type.
  void add_path(std::string_view rel);

  bool empty() const { return rules_.empty(); }
  // Whether the entry whose path from the directory is `components` (NUL-
  // terminated names, its own last) is left out; `directory`: it is one.
  bool excludes(const std::vector<const char*>& components, bool directory) const;
  // The same for a '/'-separated relative path.
  bool excludes(std::string_view rel, bool directory) const;

private:
  struct Rule {
    std::vector<std::string> components; // "**" as itself; a literal rule has none
    bool directories_only = false;
    bool literal = false; // compared byte for byte, not as globs
  };
  std::vector<Rule> rules_;
};

// The path of `path` relative to the directory `root` when it lies strictly
// inside it, both made absolute against `cwd` and normalised by their words
// alone ("." and empty components dropped, ".." taking the one before it):
// no symbolic link is followed. nullopt when it does not lie inside.
std::optional<std::string> path_inside(std::string_view root, std::string_view path, std::string_view cwd);

} // namespace bufferlock
