// util/json.hpp and the documents of --json (lock/status_format.hpp), read
// back by a real JSON parser (nlohmann-json, for the tests only).
#include "lock/status_format.hpp"
#include "util/json.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <random>

using namespace bufferlock;
using nlohmann::json;

namespace {

std::string parsed(std::string_view bytes) { return json::parse(json_string(bytes)).get<std::string>(); }

const std::string fffd = "\xEF\xBF\xBD";

std::string utf8(char32_t c) {
  std::string out;
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
  return out;
}

} // namespace

TEST(JsonString, PinnedEscapes) {
  EXPECT_EQ(json_string(""), "\"\"");
  EXPECT_EQ(json_string("a\"b\\c"), R"("a\"b\\c")");
  EXPECT_EQ(json_string(std::string("\n\t\x01\x1f\x7f\0", 6)), R"("\u000a\u0009\u0001\u001f\u007f\u0000")");
  EXPECT_EQ(json_string("/ ~"), "\"/ ~\"");
  EXPECT_EQ(json_string("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x94\x92"),
            "\"caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x94\x92\"");
}

TEST(JsonString, EachByteOfAnInvalidSequenceIsReplaced) {
  EXPECT_EQ(json_string("\x80"), R"("\ufffd")");                               // stray continuation
  EXPECT_EQ(json_string("\xC3"), R"("\ufffd")");                               // truncated at the end
  EXPECT_EQ(json_string("\xE2\x82x"), R"("\ufffd\ufffdx")");                   // truncated before ASCII
  EXPECT_EQ(json_string("\xC0\xAF"), R"("\ufffd\ufffd")");                     // overlong '/'
  EXPECT_EQ(json_string("\xE0\x80\xAF"), R"("\ufffd\ufffd\ufffd")");           // overlong, 3 bytes
  EXPECT_EQ(json_string("\xF0\x80\x80\xAF"), R"("\ufffd\ufffd\ufffd\ufffd")"); // overlong, 4 bytes
  EXPECT_EQ(json_string("\xED\xA0\x80"), R"("\ufffd\ufffd\ufffd")");           // surrogate U+D800
  EXPECT_EQ(json_string("\xF4\x90\x80\x80"), R"("\ufffd\ufffd\ufffd\ufffd")"); // U+110000
  EXPECT_EQ(json_string("\xF5\xFF"), R"("\ufffd\ufffd")");
  // The byte after a broken lead is read afresh: here a valid "é".
  EXPECT_EQ(json_string("\xE2\xC3\xA9"), "\"\\ufffd\xC3\xA9\"");
  // The edges that are valid.
  EXPECT_EQ(parsed("\xED\x9F\xBF"), "\xED\x9F\xBF");         // U+D7FF
  EXPECT_EQ(parsed("\xEE\x80\x80"), "\xEE\x80\x80");         // U+E000
  EXPECT_EQ(parsed("\xF4\x8F\xBF\xBF"), "\xF4\x8F\xBF\xBF"); // U+10FFFF
  EXPECT_EQ(parsed("\xC2\x80"), "\xC2\x80");                 // U+0080
}

TEST(JsonString, ValidUtf8RoundTripsThroughAParser) {
  std::mt19937 rng(25);
  std::uniform_int_distribution<std::uint32_t> plane(0, 3), low(0, 0x7F), any(0, 0x10FFFF);
  for (int round = 0; round < 2000; ++round) {
    std::string s;
    const int n = static_cast<int>(rng() % 24);
    for (int i = 0; i < n; ++i) {
      char32_t c = plane(rng) == 0 ? any(rng) : low(rng);
      if (c >= 0xD800 && c <= 0xDFFF) c = 0xFFFD;
      s += utf8(c);
    }
    const std::string out = json_string(s);
    EXPECT_EQ(
        out.find_first_of(std::string("\x7f\0\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f"
                                      "\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f",
                                      33)),
        std::string::npos);
    ASSERT_EQ(json::parse(out).get<std::string>(), s) << out;
  }
}

TEST(JsonString, AnyBytesParseAndInvalidOnesBecomeReplacementCharacters) {
  // Pieces whose expected reading is known: valid characters as they are,
  // and invalid bytes that cannot join their neighbours, one U+FFFD each.
  std::mt19937 rng(2025);
  for (int round = 0; round < 2000; ++round) {
    std::string in, expected;
    const int n = static_cast<int>(rng() % 16);
    for (int i = 0; i < n; ++i) {
      switch (rng() % 6) {
      case 0: // a stray continuation byte (every piece ends complete)
        in += static_cast<char>(0x80 + rng() % 0x40);
        expected += fffd;
        break;
      case 1: // never valid: C0, C1, F5..FF
        in += static_cast<char>(std::array<unsigned char, 4>{0xC0, 0xC1, 0xF5, 0xFF}[rng() % 4]);
        expected += fffd;
        break;
      case 2: // a 3-byte sequence cut short, then ASCII
        in += "\xE2\x82q";
        expected += fffd + fffd + "q";
        break;
      default: {
        const char32_t c = static_cast<char32_t>(rng() % 3 ? rng() % 0x80 : 0xE000 + rng() % 0x2000);
        in += utf8(c);
        expected += utf8(c);
      }
      }
    }
    ASSERT_EQ(parsed(in), expected) << json_string(in);
  }
}

TEST(JsonObject, FieldsInOrderWithJsonTypes) {
  const std::string text = JsonObject()
                               .string("s", "x")
                               .number("n", 18446744073709551615ULL)
                               .millis("t", 3214)
                               .boolean("b", true)
                               .numbers("a", {1, 2})
                               .raw("o", JsonObject().str())
                               .str();
  EXPECT_EQ(text, R"({"s": "x", "n": 18446744073709551615, "t": 3.214, "b": true, "a": [1, 2], "o": {}})");
  const json j = json::parse(text);
  EXPECT_EQ(j["n"].get<std::uint64_t>(), 18446744073709551615ULL);
  EXPECT_DOUBLE_EQ(j["t"].get<double>(), 3.214);
  EXPECT_EQ(json_millis(5), "0.005");
  EXPECT_EQ(json_millis(-5), "0.000");
  EXPECT_EQ(json_array({}), "[]");
}

TEST(StatusFormat, TextFieldsInTheirOrder) {
  StatusInfo info;
  info.slots_taken = 2;
  info.slots_total = 3;
  info.ttl_ms = 3005;
  info.holder.pids = {12, 34};
  info.holder.host = "ci-1";
  info.holder.since_ns = 1'000'000'000;
  info.holder.fence = 7;
  EXPECT_EQ(status_fields(info, 4'250'900'000),
            " slots=2/3 ttl=3.005 pid=12,34 host=ci-1 since=3.250 fence=7");
  info = {};
  info.no_ttl = true;
  EXPECT_EQ(status_fields(info, 0), " ttl=none");
  EXPECT_EQ(status_fields({}, 0), "");
}

TEST(StatusFormat, StatusDocumentLeavesOutWhatIsUnknown) {
  StatusInfo info;
  info.no_ttl = true;
  info.holder.host = "h\"1";
  const std::string text =
      status_json("k\n", LockState::held, {true, "127.0.0.1:6379", "buffer:lock:x"}, info, 0);
  ASSERT_TRUE(text.ends_with("}\n"));
  const json j = json::parse(text);
  EXPECT_EQ(j["key"], "k\n");
  EXPECT_EQ(j["state"], "held");
  EXPECT_EQ(j["backend"], "redis");
  EXPECT_EQ(j["server"], "127.0.0.1:6379");
  EXPECT_EQ(j["redis_key"], "buffer:lock:x");
  EXPECT_EQ(j["host"], "h\"1");
  EXPECT_EQ(j["no_ttl"], true);
  EXPECT_EQ(j["digest"].get<std::string>().size(), 32u);
  for (const char* absent : {"ttl", "pids", "since", "fence", "slots", "slots_taken", "dir", "path"})
    EXPECT_FALSE(j.contains(absent)) << absent;
}

TEST(StatusFormat, ListDocument) {
  EXPECT_EQ(list_json({}, 0), "{\"locks\": []}\n");
  ListedLock l{{false, "/d", "/d/x.1.lock"}, std::string(32, 'a'), 1, {}};
  l.info.holder.pids = {5};
  l.info.holder.since_ns = 0;
  const json j = json::parse(list_json({l, l}, 2'000'000'000));
  ASSERT_EQ(j["locks"].size(), 2u);
  EXPECT_EQ(j["locks"][0]["slot"], 1);
  EXPECT_EQ(j["locks"][0]["since"].get<double>(), 2.0);
  EXPECT_EQ(j["locks"][0]["pids"], json::array({5}));
  EXPECT_FALSE(j["locks"][0].contains("key"));
  EXPECT_EQ(list_text({l}, 2'000'000'000), "md5:" + std::string(32, 'a') + " slot=1 pid=5 since=2.000\n");
}
