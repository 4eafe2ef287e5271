#include "cache/store.hpp"

#include <gtest/gtest.h>

using namespace bufferlock;

// The names entries are filed under in a cache directory and on an HTTP
// server: pinned, since entries written earlier must still be found.
TEST(EntryFileName, IsTheKeysMd5ThenTheAddress) {
  EXPECT_EQ(entry_file_name("abc", std::nullopt), "900150983cd24fb0d6963f7d28e17f72.entry");
  const Digest128 d{0x0123456789abcdefULL, 0xfedcba9876543210ULL};
  EXPECT_EQ(entry_file_name("abc", d),
            "900150983cd24fb0d6963f7d28e17f72.0123456789abcdeffedcba9876543210.entry");
}

// What the file and http stores take for an entry's name: entry_file_name's
// form alone, of any KEY or of one (its md5 as the stem).
TEST(EntryFileName, IsRecognisedByItsFormAlone) {
  const Digest128 d{0x0123456789abcdefULL, 0xfedcba9876543210ULL};
  EXPECT_TRUE(is_entry_file_name(entry_file_name("abc", std::nullopt)));
  EXPECT_TRUE(is_entry_file_name(entry_file_name("abc", d)));
  EXPECT_TRUE(is_entry_file_name(entry_file_name("abc", d), "900150983cd24fb0d6963f7d28e17f72"));
  EXPECT_FALSE(is_entry_file_name(entry_file_name("abd", d), "900150983cd24fb0d6963f7d28e17f72"));
  EXPECT_FALSE(is_entry_file_name("900150983cd24fb0d6963f7d28e17f7.entry"));
  EXPECT_FALSE(is_entry_file_name("900150983cd24fb0d6963f7d28e17f72.0123456789abcdeffedcba987654321x.entry"));
  EXPECT_FALSE(is_entry_file_name("900150983cd24fb0d6963f7d28e17f72-0123456789abcdeffedcba9876543210.entry"));
  EXPECT_FALSE(is_entry_file_name("900150983cd24fb0d6963f7d28e17f72.entry.tmp"));
  EXPECT_FALSE(is_entry_file_name("x.entry"));
}

namespace {

StaleCandidate candidate(std::string key, std::int64_t created, std::string name,
                         std::vector<std::string> outputs = {}) {
  StaleCandidate c;
  c.header.key = std::move(key);
  c.header.created_ns = created;
  c.header.outputs = std::move(outputs);
  c.name = std::move(name);
  return c;
}

} // namespace

TEST(NewestReadable, TriesKeysOwnNewestFirstAndSkipsWhatIsNotFound) {
  std::vector<std::string> tried;
  const Lookup l = newest_readable("k", {},
                                   {candidate("k", 10, "old"), candidate("other", 99, "foreign"),
                                    candidate("k", 30, "new"), candidate("k", 30, "new2"),
                                    candidate("k", 50, "outputs", {"dist"})},
                                   [&](const StaleCandidate& c) -> Lookup {
                                     tried.push_back(c.name);
                                     if (c.name == "old") return {LookupState::found, {}, {}};
                                     return {LookupState::missing, {}, {}};
                                   });
  EXPECT_EQ(l.state, LookupState::found);
  EXPECT_EQ(tried, (std::vector<std::string>{"new2", "new", "old"}));
}

TEST(NewestReadable, AnUnreadableStoreEndsTheSearch) {
  int reads = 0;
  const Lookup l = newest_readable("k", {}, {candidate("k", 1, "a"), candidate("k", 2, "b")},
                                   [&](const StaleCandidate&) -> Lookup {
                                     ++reads;
                                     return {LookupState::unreadable, {}, "down"};
                                   });
  EXPECT_EQ(l.state, LookupState::unreadable);
  EXPECT_EQ(l.why, "down");
  EXPECT_EQ(reads, 1);
}

TEST(NewestReadable, ACorruptNewerCandidateIsPassedOverAndSaid) {
  const auto read = [](const StaleCandidate& c) -> Lookup {
    if (c.name == "new") return {LookupState::corrupt, {}, "bad checksum"};
    return {LookupState::found, {}, {}};
  };
  const Lookup l = newest_readable("k", {}, {candidate("k", 1, "old"), candidate("k", 2, "new")}, read);
  EXPECT_EQ(l.state, LookupState::found);
  EXPECT_EQ(l.why, "bad checksum");
  // Only corrupt ones: the first is the answer, not a miss.
  const Lookup c = newest_readable("k", {}, {candidate("k", 2, "new")}, read);
  EXPECT_EQ(c.state, LookupState::corrupt);
  EXPECT_EQ(c.why, "bad checksum");
  // Nothing passed over: found says nothing.
  EXPECT_EQ(newest_readable("k", {}, {candidate("k", 1, "old")}, read).why, "");
}

TEST(NewestReadable, NothingOfTheKeyIsAMiss) {
  const Lookup l =
      newest_readable("k", {"out"}, {candidate("k", 1, "a")}, [](const StaleCandidate&) -> Lookup {
        return {LookupState::found, {}, {}};
      });
  EXPECT_EQ(l.state, LookupState::missing);
}

TEST(ListedEntry, TakesWhatListShows) {
  EntryHeader h;
  h.created_ns = 42;
  h.key = "k";
  h.outputs = {"a", "b"};
  const ListedEntry e = listed_entry(h, 1234);
  EXPECT_EQ(e.created_ns, 42);
  EXPECT_EQ(e.key, "k");
  EXPECT_EQ(e.size, h.stdout_size());
  EXPECT_EQ(e.outputs, 2u);
  EXPECT_FALSE(e.inputs);
  EXPECT_EQ(e.stored, 1234u);
}
