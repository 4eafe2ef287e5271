// This machine's name, as a Redis lock's holder record and a cache entry's
// manifest record it (empty when the system will not say).
#pragma once

#include <string>

namespace bufferlock {

std::string host_name();

} // namespace bufferlock
