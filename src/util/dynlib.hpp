// A shared library loaded on first use with dlopen() and never closed, its
// functions bound by name into a struct of function pointers: what keeps
// libssl, libcrypto, libcurl and libarchive off the start of every run that
// does not use them (ARCHITECTURE.md, Start-up).
//
// A user lists its functions once, as an X-macro, and makes from that list
// both the struct and the table of symbols:
//
//   #define LIBFOO_FUNCTIONS(X) X(foo_open) X(foo_close)
//   struct Api { LIBFOO_FUNCTIONS(BUFFERLOCK_DYNLIB_FIELD) };
//   static const DynLib<Api> lib = load_library<Api>({"libfoo.so.1"},
//       {LIBFOO_FUNCTIONS(BUFFERLOCK_DYNLIB_SYMBOL)});
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string>
#include <type_traits>

namespace bufferlock {

// One function to bind: its name, and where its pointer lies in the struct.
struct DynSymbol {
  const char* name;
  std::size_t offset;
};

// The members and the table entries of an X-macro list of functions, for a
// struct named Api (the functions declared by the library's own headers).
#define BUFFERLOCK_DYNLIB_FIELD(fn) decltype(&::fn) fn;
#define BUFFERLOCK_DYNLIB_SYMBOL(fn) ::bufferlock::DynSymbol{#fn, offsetof(Api, fn)},

// Loads the first of `names` that dlopen(RTLD_NOW | RTLD_LOCAL) finds and
// writes every symbol's address into `api` (of `size` bytes) at its
// offset. Empty, or why not: "cannot load NAME: WHY" (the first name's)
// or "NAME has no SYMBOL" (the first missing); then `api` is partly bound.
std::string bind_library(std::initializer_list<const char*> names, std::initializer_list<DynSymbol> symbols,
                         void* api, std::size_t size);

// A loaded library's functions, or the reason it could not be loaded (a
// value for the caller's own message; nothing is printed here). On failure
// every pointer is null.
template <class Api> struct DynLib {
  Api api{};
  std::string error;
  bool loaded() const { return error.empty(); }
};

template <class Api>
DynLib<Api> load_library(std::initializer_list<const char*> names, std::initializer_list<DynSymbol> symbols) {
  static_assert(std::is_standard_layout_v<Api> && std::is_trivially_copyable_v<Api>,
                "a plain struct of function pointers");
  static_assert(sizeof(void*) == sizeof(void (*)()), "dlsym's addresses fit function pointers");
  DynLib<Api> lib;
  lib.error = bind_library(names, symbols, &lib.api, sizeof(Api));
  if (!lib.loaded()) lib.api = Api{};
  return lib;
}

} // namespace bufferlock
