#include "util/progress_line.hpp"

#include <cstdio>

namespace bufferlock {

namespace {

bool continuation(char c) { return (static_cast<unsigned char>(c) & 0xc0) == 0x80; }

// A detail cut shorter than this says too little to be worth its parentheses.
constexpr std::size_t min_detail = 12;
// A subject is never cut below this many columns (+ "...") before the line is.
constexpr std::size_t min_subject = 4;

} // namespace

std::string short_duration(Nanos d) {
  const long long s = d.count() > 0 ? d.count() / 1'000'000'000 : 0;
  char buf[32];
  if (s < 60) {
    std::snprintf(buf, sizeof buf, "%llds", s);
  } else if (s < 3600) {
    if (s % 60)
      std::snprintf(buf, sizeof buf, "%lldm%02llds", s / 60, s % 60);
    else
      std::snprintf(buf, sizeof buf, "%lldm", s / 60);
  } else if (s < 86400) {
    if (s / 60 % 60)
      std::snprintf(buf, sizeof buf, "%lldh%02lldm", s / 3600, s / 60 % 60);
    else
      std::snprintf(buf, sizeof buf, "%lldh", s / 3600);
  } else {
    if (s / 3600 % 24)
      std::snprintf(buf, sizeof buf, "%lldd%02lldh", s / 86400, s / 3600 % 24);
    else
      std::snprintf(buf, sizeof buf, "%lldd", s / 86400);
  }
  return buf;
}

std::size_t text_columns(std::string_view text) {
  std::size_t n = 0;
  for (const char c : text)
    n += continuation(c) ? 0 : 1;
  return n;
}

std::string cut_to_columns(std::string_view text, std::size_t columns) {
  if (text_columns(text) <= columns) return std::string(text);
  const std::size_t keep = columns > 3 ? columns - 3 : 0;
  std::size_t cols = 0, end = 0;
  for (; end < text.size(); ++end) {
    if (continuation(text[end])) continue;
    if (cols == keep) break;
    ++cols;
  }
  std::string out(text.substr(0, end));
  out.append(std::string_view("...").substr(0, columns - keep));
  return out;
}

std::string fit_progress_line(const ProgressLine& line, std::size_t width) {
  const std::size_t budget = width > 1 ? width - 1 : 0;
  // lead + " '" + "' " + tail, without subject and detail
  const std::size_t fixed = text_columns(line.lead) + 4 + text_columns(line.tail);
  const std::size_t subject = text_columns(line.subject);
  std::string detail(line.detail);
  std::string subj(line.subject);
  if (!detail.empty()) {
    const std::size_t room = budget > fixed + subject + 3 ? budget - fixed - subject - 3 : 0;
    if (room < text_columns(detail)) detail = room >= min_detail ? cut_to_columns(detail, room) : "";
  }
  if (detail.empty() && fixed + subject > budget)
    subj = cut_to_columns(line.subject, budget > fixed + min_subject + 3 ? budget - fixed : min_subject + 3);
  std::string out;
  out.reserve(fixed + subj.size() + detail.size() + 3);
  out.append(line.lead).append(" '").append(subj).append("' ");
  if (!detail.empty()) out.append("(").append(detail).append(") ");
  out.append(line.tail);
  return text_columns(out) > budget ? cut_to_columns(out, budget) : out;
}

} // namespace bufferlock
