// --explain (and -v): the one line that says why a call missed, or which
// entry a hit served (SPEC §21). What it compares with costs only then:
// the headers of KEY's entries, never their bodies.
#pragma once

#include "cache/manifest.hpp"
#include "cache/recipe.hpp"
#include "cache/store.hpp"

namespace bufferlock {

// Whether a call says why it missed: --explain, or -v.
bool explaining(const CacheRequest& o);

// The manifest section a build writes: `seen` (the walk's), with the
// builder's hostname.
EntrySection manifest_section(Manifest seen);

// With --explain (the caller checks): the hit line of the entry with header `h`.
void explain_hit(const CacheRequest& o, const EntryHeader& h);

// The line of an entry within --stale (`h`), once the call knows `what` it
// does with it: served while another caller or a background run rebuilds
// it, or rebuilt now. Said only when explaining.
void explain_stale(const CacheRequest& o, const EntryHeader& h, std::string_view what);

// The miss line: `found` is the first lookup at the caller's address
// (missing, corrupt, unreadable, or an entry that is not fresh), `inputs`
// and `now` what the inputs are.
void explain_miss(const CacheRequest& o, const EntryStore& store, const Lookup& found, const Inputs& inputs,
                  const Manifest& now);

// Why the call missed, `found` and the rest as for explain_miss (the line's
// %{why}).
std::string miss_reason(const CacheRequest& o, const EntryStore& store, const Lookup& found, const Inputs& inputs,
                        const Manifest& now);

} // namespace bufferlock
