#include "lock/multi_lock.hpp"

#include "messages.hpp"
#include "util/clock.hpp"
#include "util/md5.hpp"

#include <stdlib.h>

#include <algorithm>
#include <memory>
#include <numeric>

namespace bufferlock {

std::vector<std::size_t> canonical_order(const std::vector<std::string>& keys) {
  std::vector<std::string> digests;
  digests.reserve(keys.size());
  for (const auto& k : keys)
    digests.push_back(md5_hex(k));
  std::vector<std::size_t> order(keys.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return digests[a] < digests[b]; });
  order.erase(std::unique(order.begin(), order.end(),
                          [&](std::size_t a, std::size_t b) { return digests[a] == digests[b]; }),
              order.end());
  return order;
}

MultiLock::MultiLock(std::vector<std::unique_ptr<Lock>> locks, std::vector<std::size_t> order,
                     std::vector<std::string> keys)
    : locks_(std::move(locks)), order_(std::move(order)), keys_(std::move(keys)) {}

Outcome MultiLock::acquire(Nanos wait, OnError on_error) {
  const Nanos deadline = wait.count() <= 0 ? Nanos(0) : deadline_after(wait);
  for (taken_ = 0; taken_ < order_.size(); ++taken_) {
    Nanos left = Nanos(0);
    if (deadline == infinite_duration)
      left = infinite_duration;
    else if (wait.count() > 0)
      left = std::max(Nanos(0), deadline - monotonic_now()); // 0: one last try
    Outcome o = locks_[order_[taken_]]->acquire(left, on_error);
    if (o.status != AcquireStatus::acquired) {
      busy_ = order_[taken_];
      release(); // nothing is kept when one is busy
      return o;
    }
  }
  return Outcome::acquired();
}

void MultiLock::release() {
  while (taken_ > 0)
    locks_[order_[--taken_]]->release();
}

std::string MultiLock::holder() {
  std::string h = locks_[busy_]->holder();
  if (busy_ == 0) return h;
  std::string out = "'";
  out += display_key(keys_[busy_]);
  out += "'";
  if (!h.empty()) out.append(" ").append(h);
  return out;
}

std::string MultiLock::where() const {
  std::string out;
  for (std::size_t i : order_) {
    if (!out.empty()) out += ", ";
    out += locks_[i]->where();
  }
  return out;
}

void MultiLock::export_env() const {
  locks_.front()->export_env();
  std::string slots, fences;
  for (std::size_t i = 1; i < locks_.size(); ++i) {
    // A key named twice was taken once: it shares that lock's slot and fence.
    std::size_t held = i;
    for (std::size_t j : order_)
      if (md5_hex(keys_[j]) == md5_hex(keys_[i])) held = j;
    const auto f = locks_[held]->fence();
    if (i > 1) {
      slots += ' ';
      fences += ' ';
    }
    slots += std::to_string(locks_[held]->slot());
    fences += f ? std::to_string(*f) : std::string("-");
  }
  ::setenv("BUFFERLOCK_ALSO_SLOT", slots.c_str(), 1);
  ::setenv("BUFFERLOCK_ALSO_FENCE", fences.c_str(), 1);
}

std::optional<Ticker> MultiLock::keepalive() {
  struct Member {
    Ticker ticker;
    Nanos due; // monotonic; infinite_duration: never again
  };
  auto members = std::make_shared<std::vector<Member>>();
  Nanos first = infinite_duration;
  for (std::size_t i : order_) {
    if (auto t = locks_[i]->keepalive()) {
      first = std::min(first, t->first_at);
      const Nanos due = t->first_at;
      members->push_back({std::move(*t), due});
    }
  }
  if (members->empty()) return std::nullopt;
  return Ticker{first, [members](pid_t child) {
                  Nanos next = infinite_duration;
                  for (Member& m : *members) {
                    // The clock read anew for each: a member's renewal may
                    // have taken a while.
                    if (m.due <= monotonic_now()) m.due = m.ticker.tick(child);
                    next = std::min(next, m.due);
                  }
                  return next;
                }};
}

std::vector<int> MultiLock::inheritable_fds() const {
  std::vector<int> fds;
  for (std::size_t i : order_)
    for (int fd : locks_[i]->inheritable_fds())
      fds.push_back(fd);
  return fds;
}

} // namespace bufferlock
