// Who holds a flock(2) lock, as far as /proc/locks tells.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

namespace bufferlock {

// PIDs holding (not waiting for) FLOCK locks on the file (dev, ino), parsed
// from the text of /proc/locks. Pure, for the unit tests.
std::vector<pid_t> parse_flock_holders(std::string_view proc_locks, dev_t dev, ino_t ino);

// The text of /proc/locks; empty when it cannot be read.
std::string read_proc_locks();

// The same, read from /proc/locks; empty when it cannot be read.
std::vector<pid_t> flock_holders(dev_t dev, ino_t ino);

} // namespace bufferlock
