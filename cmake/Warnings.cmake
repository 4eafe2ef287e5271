# Warnings for our own targets (not for third-party headers).
add_library(bufferlock_warnings INTERFACE)
target_compile_options(bufferlock_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion
  -Wnon-virtual-dtor -Wold-style-cast -Wcast-align
  -Wdouble-promotion -Wformat=2 -Wimplicit-fallthrough)
