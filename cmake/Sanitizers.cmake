# BUFFERLOCK_SANITIZE: AddressSanitizer + UndefinedBehaviorSanitizer for every
# target. The sanitizer runtimes want the shared libstdc++, so the static
# runtime is turned off with them.
if(BUFFERLOCK_SANITIZE)
  set(BUFFERLOCK_STATIC_RUNTIME OFF CACHE BOOL "" FORCE)
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()

# BUFFERLOCK_FUZZ: the libFuzzer targets of tests/fuzz (clang only), with
# AddressSanitizer + UndefinedBehaviorSanitizer; everything else is
# instrumented for coverage-guided fuzzing, but only the targets link libFuzzer.
if(BUFFERLOCK_FUZZ)
  set(BUFFERLOCK_STATIC_RUNTIME OFF CACHE BOOL "" FORCE)
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
                      -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()

# BUFFERLOCK_COVERAGE: gcov counters in every target, for gcovr (build.sh test).
if(BUFFERLOCK_COVERAGE)
  add_compile_definitions(BUFFERLOCK_COVERAGE)
  # Atomic counters: the quorum's connect threads run the same code at once,
  # and lost increments make gcov derive negative branch counts.
  add_compile_options(--coverage -fprofile-update=atomic)
  add_link_options(--coverage)
endif()
