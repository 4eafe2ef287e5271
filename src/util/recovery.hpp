// Whether waiting can mend a failure: a backend that restarts or fails over
// comes back; a wrong password or an unknown host does not (SPEC §7).
#pragma once

namespace bufferlock {

enum class Recovery { transient, permanent };

} // namespace bufferlock
