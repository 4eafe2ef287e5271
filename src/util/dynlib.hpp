// A shared library loaded on first use with dlopen() and never closed, its
// functions bound by name into a struct of function pointers: what keeps
// libssl, libcrypto, libcurl and libarchive off the start of every run that
// does not use them (ARCHITECTURE.md, Start-up).
//
// A user lists its functions once, as an X-macro, and makes from that list
// the struct, the names and where each pointer lies:
//
//   #define LIBFOO_FUNCTIONS(X) X(foo_open) X(foo_close)
//   struct Api { LIBFOO_FUNCTIONS(BUFFERLOCK_DYNLIB_FIELD) };
//   static const DynLib<Api> lib = load_library<Api>({"libfoo.so.1"},
//       LIBFOO_FUNCTIONS(BUFFERLOCK_DYNLIB_NAME), {LIBFOO_FUNCTIONS(BUFFERLOCK_DYNLIB_OFFSET)});
//
// The names are one string and the places plain numbers, not a table of
// pointers: a table of pointers would be relocated at every start of the
// binary, loaded or not.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string>
#include <type_traits>

namespace bufferlock {

// The member, the name ("fn\0", in one string with the others) and the
// offset in the struct of each function of an X-macro list, for a struct
// named Api (the functions declared by the library's own headers).
// NOLINTNEXTLINE(bugprone-macro-parentheses): a declaration, not an expression
#define BUFFERLOCK_DYNLIB_FIELD(fn) decltype(&::fn) fn;
#define BUFFERLOCK_DYNLIB_NAME(fn) #fn "\0"
#define BUFFERLOCK_DYNLIB_OFFSET(fn) offsetof(Api, fn),

// Loads the first of `libraries` that dlopen(RTLD_NOW | RTLD_LOCAL) finds
// and writes the address of the i-th of `names` (NUL-separated) into `api`
// (of `size` bytes) at `offsets[i]`, for i < `count`. Empty, or why not:
// "cannot load NAME: WHY" (the first library's) or "NAME has no SYMBOL"
// (the first missing); then `api` is partly bound.
std::string bind_library(std::initializer_list<const char*> libraries, const char* names,
                         const std::size_t* offsets, std::size_t count, void* api, std::size_t size);

// A loaded library's functions, or the reason it could not be loaded (a
// value for the caller's own message; nothing is printed here). On failure
// every pointer is null.
template <class Api> struct DynLib {
  Api api{};
  std::string error;
  bool loaded() const { return error.empty(); }
};

template <class Api, std::size_t N>
DynLib<Api> load_library(std::initializer_list<const char*> libraries, const char* names,
                         const std::size_t (&offsets)[N]) {
  static_assert(std::is_standard_layout_v<Api> && std::is_trivially_copyable_v<Api>,
                "a plain struct of function pointers");
  static_assert(sizeof(void*) == sizeof(void (*)()), "dlsym's addresses fit function pointers");
  DynLib<Api> lib;
  lib.error = bind_library(libraries, names, offsets, N, &lib.api, sizeof(Api));
  if (!lib.loaded()) lib.api = Api{};
  return lib;
}

} // namespace bufferlock
