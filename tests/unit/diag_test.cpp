#include "messages.hpp"
#include "util/diag.hpp"

#include <gtest/gtest.h>

using namespace bufferlock;

namespace {
std::string sub(std::string_view tmpl, std::vector<diag::Placeholder> values) {
  return diag::substitute(tmpl, values);
}
} // namespace

TEST(Diag, SubstitutesPlaceholders) {
  EXPECT_EQ(sub("cannot open %{path}: %{error}", {{"path", "/x"}, {"error", "nope"}}),
            "cannot open /x: nope");
  EXPECT_EQ(sub("%{a}%{a}", {{"a", "1"}}), "11");
}

TEST(Diag, LeavesUnknownPlaceholdersAndBrokenSyntax) {
  EXPECT_EQ(sub("x %{nope} y", {{"a", "1"}}), "x %{nope} y");
  EXPECT_EQ(sub("x %{a", {{"a", "1"}}), "x %{a");
}

TEST(Diag, ValuesCannotSplitTheLine) {
  EXPECT_EQ(sub("path %{path}", {{"path", "a\nb\tc\x7f"}}), "path a\\x0ab\\x09c\\x7f");
}

TEST(Diag, PrintableKeepsUtf8AndEscapesInvalidBytes) {
  EXPECT_EQ(diag::printable("caf\xc3\xa9 \xf0\x9f\x94\x92"), "caf\xc3\xa9 \xf0\x9f\x94\x92");
  EXPECT_EQ(diag::printable("\xff\xc3"), "\\xff\\xc3");
  EXPECT_EQ(diag::printable("\xc0\x80"), "\\xc0\\x80");          // overlong NUL
  EXPECT_EQ(diag::printable("\xed\xa0\x80"), "\\xed\\xa0\\x80"); // surrogate
}

TEST(Messages, KeysAreStable) {
  EXPECT_EQ(message_key(Msg::lock_open_failed), "lock_open_failed");
  EXPECT_EQ(message_key(Msg::lock_dir_create_failed), "lock_dir_create_failed");
  EXPECT_EQ(message(Msg::lock_failed, {{"path", "/d/x.lock"}, {"error", "No locks"}}),
            "cannot lock /d/x.lock: No locks");
}

TEST(Messages, DisplayKeyCutsLongKeysOnACharacterBoundary) {
  EXPECT_EQ(display_key("short"), "short");
  const std::string long_key = std::string(63, 'a') + "\xc3\xa9" + "tail";
  EXPECT_EQ(display_key(long_key), std::string(63, 'a') + "...");
}
