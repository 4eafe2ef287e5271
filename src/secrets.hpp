// Secrets kept from the other users of the machine: a Redis or http store
// password given on the command line, which ps(1) shows to everyone, and private key files
// that others can read.
#pragma once

#include "cli.hpp"

#include <string>

namespace bufferlock {

// Called once after parsing, before anything connects or forks: overwrites the
// password of every Redis or http store URL among bufferlock's own words in
// argv (not the command's, which are the command's to show), so that
// /proc/PID/cmdline reads "redis://:***@host"; says so with -v only (cron
// mails every line of stderr), naming what keeps each kind off. Then warns about a --tls-key file that group or others can read.
void protect_secrets(int argc, char** argv, const Options& o);

// One warning naming `path` and its mode when group or others can read it,
// as ssh(1) complains about a private key; nothing when only its owner can
// (or it cannot be examined: opening it reports that).
void warn_if_key_exposed(const std::string& path);

} // namespace bufferlock
