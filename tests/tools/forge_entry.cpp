// forge_entry CACHEDIR KEY STDOUT_FILE ARCHIVE_FILE PATH...: writes the
// file-store entry of KEY with the given stdout and outputs archive (any
// bytes: the tests hand-make hostile archives), framed by the program's own
// EntryWriter. Prints the header size and the body length, which a test
// needs to load the same bytes into a Redis hash (h, 0, t).
#include "cache/file_store.hpp"
#include "util/clock.hpp"

#include <cstdio>
#include <fstream>
#include <iterator>

using namespace bufferlock;

int main(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr, "usage: forge_entry CACHEDIR KEY STDOUT_FILE ARCHIVE_FILE PATH...\n");
    return 64;
  }
  const CacheStore store(argv[1]);
  if (auto e = store.prepare()) {
    std::fprintf(stderr, "forge_entry: %s: %s\n", e->path.c_str(), e->reason.c_str());
    return 1;
  }
  std::ifstream in(argv[3], std::ios::binary);
  const std::string out((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::ifstream arch(argv[4], std::ios::binary);
  if (!arch) {
    std::perror(argv[4]);
    return 1;
  }
  const std::string archive((std::istreambuf_iterator<char>(arch)), std::istreambuf_iterator<char>());
  BuildContents what;
  for (int i = 5; i < argc; ++i)
    what.outputs.emplace_back(argv[i]);
  auto created = EntryWriter::create(store, argv[2], wall_clock_ns(), std::nullopt, what);
  if (auto* e = std::get_if<SysError>(&created)) {
    std::fprintf(stderr, "forge_entry: %s: %s\n", e->path.c_str(), e->reason.c_str());
    return 1;
  }
  auto& w = std::get<EntryWriter>(created);
  if (!w.append(out.data(), out.size()) ||
      !w.append_outputs(archive.data(), archive.size()) || w.publish()) {
    std::fprintf(stderr, "forge_entry: cannot write the entry\n");
    return 1;
  }
  const CachedEntry e = w.entry();
  std::printf("%llu %llu\n", static_cast<unsigned long long>(e.header.header_size()),
              static_cast<unsigned long long>(e.header.body_len()));
  return 0;
}
