// A shared library loaded on first use with dlopen() and never closed, its
// functions bound by name: what keeps libssl, libcrypto and libarchive off
// the start of every run that does not use them (ARCHITECTURE.md, Start-up).
#pragma once

#include <string>

namespace bufferlock {

class DynLib {
public:
  // dlopen(name, RTLD_NOW | RTLD_LOCAL); on failure error() says why.
  explicit DynLib(const char* name);

  // Binds `fn` to the function `symbol`, or to nullptr; the first symbol
  // missing is what error() says ("NAME has no SYMBOL").
  template <class Fn> void bind(Fn& fn, const char* symbol) {
    fn = reinterpret_cast<Fn>(find(symbol));
  }

  // Empty when the library and every bound function were found.
  const std::string& error() const { return error_; }

private:
  void* find(const char* symbol);

  const char* name_;
  void* handle_;
  std::string error_;
};

} // namespace bufferlock
