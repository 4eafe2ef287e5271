#include "util/dynlib.hpp"

#include <dlfcn.h>

#include <cstring>

namespace bufferlock {

std::string bind_library(std::initializer_list<const char*> names, std::initializer_list<DynSymbol> symbols,
                         void* api, std::size_t size) {
  void* handle = nullptr;
  std::string first_error;
  const char* name = nullptr;
  for (const char* n : names) {
    name = n;
    handle = ::dlopen(n, RTLD_NOW | RTLD_LOCAL);
    if (handle) break;
    if (first_error.empty()) {
      const char* why = ::dlerror();
      first_error = std::string("cannot load ") + n + ": " + (why ? why : "unknown error");
    }
  }
  if (!handle) return first_error.empty() ? "no library named" : first_error;
  for (const DynSymbol& s : symbols) {
    void* fn = ::dlsym(handle, s.name);
    if (!fn) return std::string(name) + " has no " + s.name;
    if (s.offset + sizeof fn > size) return std::string(name) + ": " + s.name + " lies outside its table";
    std::memcpy(static_cast<char*>(api) + s.offset, &fn, sizeof fn);
  }
  return {};
}

} // namespace bufferlock
