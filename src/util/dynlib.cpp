#include "util/dynlib.hpp"

#include <dlfcn.h>

#include <cstring>

namespace bufferlock {

std::string bind_library(std::initializer_list<const char*> libraries, const char* names,
                         const std::size_t* offsets, std::size_t count, void* api, std::size_t size) {
  void* handle = nullptr;
  std::string first_error;
  const char* library = nullptr;
  for (const char* l : libraries) {
    library = l;
    handle = ::dlopen(l, RTLD_NOW | RTLD_LOCAL);
    if (handle) break;
    if (first_error.empty()) {
      const char* why = ::dlerror();
      first_error = std::string("cannot load ") + l + ": " + (why ? why : "unknown error");
    }
  }
  if (!handle) return first_error.empty() ? "no library named" : first_error;
  const char* name = names;
  for (std::size_t i = 0; i < count; ++i, name += std::strlen(name) + 1) {
    if (!*name || offsets[i] + sizeof(void*) > size)
      return std::string(library) + ": the list of functions is short";
    void* fn = ::dlsym(handle, name);
    if (!fn) return std::string(library) + " has no " + name;
    std::memcpy(static_cast<char*>(api) + offsets[i], &fn, sizeof fn);
  }
  return {};
}

} // namespace bufferlock
