// Dispatch of the subcommands, and the one place exceptions are caught.
#pragma once

namespace bufferlock {

// The whole program: returns the exit status.
int app_main(int argc, char** argv);

} // namespace bufferlock
