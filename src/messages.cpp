#include "messages.hpp"

#include "util/fd.hpp"
#include "util/files.hpp"
#include "util/io.hpp"
#include "util/packed_strings.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <optional>

namespace bufferlock {

namespace {

struct Entry {
  std::string_view key;
  std::string_view text;
};

// Read at compile time only: what follows packs it (util/packed_strings.hpp).
constexpr std::array catalogue_source = {
#define BUFFERLOCK_MSG_ENTRY(key, text) Entry{#key, text},
    BUFFERLOCK_MESSAGES(BUFFERLOCK_MSG_ENTRY)
#undef BUFFERLOCK_MSG_ENTRY
};

constexpr auto entry_fields = [](const Entry& e) { return std::array{e.key, e.text}; };
constexpr std::size_t catalogue_chars = packed_chars(catalogue_source, entry_fields);
constexpr auto catalogue = pack_strings<catalogue_chars>(catalogue_source, entry_fields);

std::string_view key_at(std::size_t i) { return catalogue.get(i, 0); }
std::string_view default_text_at(std::size_t i) { return catalogue.get(i, 1); }

std::array<std::optional<std::string>, catalogue.size()> overrides;

std::string_view text_of(Msg m) {
  const auto i = static_cast<std::size_t>(m);
  return overrides[i] ? std::string_view(*overrides[i]) : default_text_at(i);
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

// The first %{name} of `text` that the default text of entry `i` does not use.
std::optional<std::string> unknown_placeholder(std::string_view text, std::size_t i) {
  std::size_t pos = 0;
  while ((pos = text.find("%{", pos)) != std::string_view::npos) {
    const std::size_t close = text.find('}', pos);
    if (close == std::string_view::npos) return std::string(text.substr(pos));
    const std::string_view ph = text.substr(pos, close + 1 - pos);
    if (default_text_at(i).find(ph) == std::string_view::npos) return std::string(ph);
    pos = close + 1;
  }
  return std::nullopt;
}

} // namespace

std::string_view message_key(Msg m) { return key_at(static_cast<std::size_t>(m)); }

std::string message(Msg m, std::initializer_list<Placeholder> values) {
  return diag::substitute(text_of(m), std::span(values.begin(), values.size()));
}

std::string message(Msg m, const MessageArgs& values) {
  std::vector<Placeholder> list;
  for (const auto& [name, value] : values)
    list.push_back({name, value});
  return diag::substitute(text_of(m), list);
}

bool load_message_overrides(const std::string& path, std::string& error) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd) {
    error = errno_text(errno);
    return false;
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    error = "not a regular file";
    return false;
  }
  std::string text;
  if (!read_to_end(fd.get(), text)) {
    error = errno_text(errno);
    return false;
  }
  apply_message_overrides(text, path);
  return true;
}

void apply_message_overrides(std::string_view text, const std::string& path) {
  std::size_t pos = 0;
  for (int line_no = 1; pos < text.size(); ++line_no) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string_view line = trim(std::string_view(text).substr(pos, end - pos));
    pos = end + 1;
    if (line.empty() || line.front() == '#') continue;
    const std::string line_text = std::to_string(line_no);
    const std::size_t eq = line.find('=');
    if (eq == std::string_view::npos) {
      diag::warn(message(Msg::messages_bad_line, {{"path", path}, {"line", line_text}}));
      continue;
    }
    const std::string_view key = trim(line.substr(0, eq));
    const std::string_view value = trim(line.substr(eq + 1));
    std::size_t i = 0;
    while (i < catalogue.size() && key_at(i) != key)
      ++i;
    if (i == catalogue.size()) {
      diag::warn(message(Msg::messages_unknown_key, {{"path", path}, {"line", line_text}, {"key", key}}));
      continue;
    }
    if (auto bad = unknown_placeholder(value, i)) {
      diag::warn(message(Msg::messages_unknown_placeholder,
                         {{"path", path}, {"line", line_text}, {"key", key}, {"value", *bad}}));
      continue;
    }
    overrides[i] = std::string(value);
  }
}

std::string list_messages() {
  std::string out;
  for (std::size_t i = 0; i < catalogue.size(); ++i)
    out.append(key_at(i)).append(" = ").append(default_text_at(i)).append("\n");
  return out;
}

std::string display_key(std::string_view key) {
  constexpr std::size_t max_shown = 64;
  if (key.size() <= max_shown) return std::string(key);
  // Cut on a UTF-8 boundary so the shown part stays valid text.
  std::size_t cut = max_shown;
  while (cut > 0 && (static_cast<unsigned char>(key[cut]) & 0xc0) == 0x80)
    --cut;
  return std::string(key.substr(0, cut)) + "...";
}

} // namespace bufferlock
