#include "util/dynlib.hpp"

#include <dlfcn.h>

namespace bufferlock {

DynLib::DynLib(const char* name) : name_(name), handle_(::dlopen(name, RTLD_NOW | RTLD_LOCAL)) {
  if (!handle_) {
    const char* why = ::dlerror();
    error_ = std::string("cannot load ") + name + ": " + (why ? why : "unknown error");
  }
}

void* DynLib::find(const char* symbol) {
  if (!handle_) return nullptr;
  void* fn = ::dlsym(handle_, symbol);
  if (!fn && error_.empty()) error_ = std::string(name_) + " has no " + symbol;
  return fn;
}

} // namespace bufferlock
