// The counters of a store kept in a cache directory (SPEC §21): the file
// store's, and an http or S3 store's without -r. One line a call
// (stats_record), appended by one write(2) with O_APPEND, so that callers
// side by side never interleave and a hit pays one local write; --stats sums
// the lines.
#pragma once

#include "cache/stats_count.hpp"

#include <string>

namespace bufferlock {

class StatsFile final : public StatsSink {
public:
  // The file `name` in the cache directory `dir`.
  StatsFile(std::string dir, const std::string& name) : dir_(std::move(dir)), path_(dir_ + "/" + name) {}

  void count(const CallCount& c) const override;
  std::variant<StatsSums, SysError> read() const override;
  std::optional<SysError> zero() const override;
  // One line a KEY in place of one a call (see stats_file.cpp).
  void compact() const override;

private:
  std::string dir_;
  std::string path_;
};

} // namespace bufferlock
