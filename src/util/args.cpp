#include "util/args.hpp"

#include <algorithm>
#include <cstring>

namespace bufferlock {

void rewrite_arg(int argc, char** argv, int index, std::size_t pos, std::size_t len, std::string_view with) {
  char* const word = argv[index];
  const std::size_t word_len = std::strlen(word);
  if (pos > word_len) return;
  len = std::min(len, word_len - pos);
  with = with.substr(0, len);
  // The end of the words laid out after this one, as execve(2) leaves them.
  char* end = word + word_len + 1;
  int last = index;
  while (last + 1 < argc && argv[last + 1] == end) {
    end += std::strlen(end) + 1;
    ++last;
  }
  char* const from = word + pos;
  const std::size_t shift = len - with.size();
  std::memcpy(from, with.data(), with.size());
  std::memmove(from + with.size(), from + len, static_cast<std::size_t>(end - (from + len)));
  std::memset(end - shift, 0, shift);
  for (int j = index + 1; j <= last; ++j)
    argv[j] -= shift;
}

} // namespace bufferlock
