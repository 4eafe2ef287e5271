#include "util/dynlib.hpp"

#include <gtest/gtest.h>

#include <cstring>

using namespace bufferlock;

namespace {

#define LIBC_FUNCTIONS(X) X(strlen) X(strcmp)

struct Api {
  LIBC_FUNCTIONS(BUFFERLOCK_DYNLIB_FIELD)
};

} // namespace

TEST(DynLib, BindsEveryListedFunction) {
  const auto lib = load_library<Api>({"libc.so.6"}, LIBC_FUNCTIONS(BUFFERLOCK_DYNLIB_NAME),
                                     {LIBC_FUNCTIONS(BUFFERLOCK_DYNLIB_OFFSET)});
  ASSERT_TRUE(lib.loaded()) << lib.error;
  EXPECT_EQ(lib.api.strlen("four"), 4u);
  EXPECT_EQ(lib.api.strcmp("a", "a"), 0);
}

TEST(DynLib, TriesTheNamesInTurn) {
  const auto lib = load_library<Api>({"libnothere.so.9", "libc.so.6"}, LIBC_FUNCTIONS(BUFFERLOCK_DYNLIB_NAME),
                                     {LIBC_FUNCTIONS(BUFFERLOCK_DYNLIB_OFFSET)});
  ASSERT_TRUE(lib.loaded()) << lib.error;
  EXPECT_EQ(lib.api.strlen("x"), 1u);
}

TEST(DynLib, SaysWhyALibraryIsMissingAndBindsNothing) {
  const auto lib =
      load_library<Api>({"libnothere.so.9", "libnotthere.so.8"}, LIBC_FUNCTIONS(BUFFERLOCK_DYNLIB_NAME),
                        {LIBC_FUNCTIONS(BUFFERLOCK_DYNLIB_OFFSET)});
  EXPECT_EQ(lib.error.rfind("cannot load libnothere.so.9: ", 0), 0u) << lib.error;
  EXPECT_EQ(lib.api.strlen, nullptr);
}

TEST(DynLib, NamesTheFirstMissingSymbolAndBindsNothing) {
  const auto lib =
      load_library<Api>({"libc.so.6"}, LIBC_FUNCTIONS(BUFFERLOCK_DYNLIB_NAME) "no_such_function_here\0",
                        {LIBC_FUNCTIONS(BUFFERLOCK_DYNLIB_OFFSET) offsetof(Api, strcmp)});
  EXPECT_EQ(lib.error, "libc.so.6 has no no_such_function_here");
  EXPECT_EQ(lib.api.strlen, nullptr);
  EXPECT_EQ(lib.api.strcmp, nullptr);
}

TEST(DynLib, ANameListShorterThanItsOffsetsIsAnError) {
  const auto lib = load_library<Api>({"libc.so.6"}, "strlen\0", {LIBC_FUNCTIONS(BUFFERLOCK_DYNLIB_OFFSET)});
  EXPECT_EQ(lib.error, "libc.so.6: the list of functions is short");
}
