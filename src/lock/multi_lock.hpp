// Several keys taken as one lock (--also, SPEC §14): all or nothing, in one
// canonical order, under one deadline. Backend-neutral: it only composes Locks.
#pragma once

#include "lock/lock.hpp"

#include <memory>
#include <string>
#include <vector>

namespace bufferlock {

// The order in which `keys` are taken: by the MD5 digest that names their
// lock file (file) or Redis key, so every caller naming the same keys, in
// whatever order, takes them in the same order and none waits for a key
// while holding one another caller waits for after it. A key named twice
// appears once (the first naming). Indexes into `keys`. Pure.
std::vector<std::size_t> canonical_order(const std::vector<std::string>& keys);

class MultiLock final : public Lock {
public:
  // locks[0] is KEY's, the rest those of --also in the order named; `order`
  // from canonical_order over the same keys.
  MultiLock(std::vector<std::unique_ptr<Lock>> locks, std::vector<std::size_t> order,
            std::vector<std::string> keys);

  // Takes each in order, each waiting only what is left of `wait`; if one is
  // busy or fails, releases those already taken and returns its outcome.
  Outcome acquire(Nanos wait, OnError on_error) override;
  void release() override; // all, in reverse order
  LockStatus status() override { return locks_.front()->status(); }
  std::string holder() override;      // of the key that was busy
  std::string where() const override; // every lock, in order
  LockPlace place() const override { return locks_.front()->place(); }
  // KEY's variables (BUFFERLOCK_SLOT, BUFFERLOCK_FENCE...), then for the
  // --also keys, in the order named, BUFFERLOCK_ALSO_SLOT and
  // BUFFERLOCK_ALSO_FENCE as space-separated lists ("-": no fence).
  void export_env() const override;
  int inheritable_fd() const override { return locks_.front()->inheritable_fd(); }
  std::vector<int> inheritable_fds() const override;
  unsigned slot() const override { return locks_.front()->slot(); }
  std::optional<std::uint64_t> fence() const override { return locks_.front()->fence(); }
  // One ticker over the members' (Redis renewal): each member's tick runs
  // when it is due; a member that finds its lock lost acts as a lone lock
  // would (warns, --on-lost term), so a lost member is a lost lock.
  std::optional<Ticker> keepalive() override;

private:
  std::vector<std::unique_ptr<Lock>> locks_;
  std::vector<std::size_t> order_;
  std::vector<std::string> keys_;
  std::size_t taken_ = 0; // how many of order_ are held
  std::size_t busy_ = 0;  // index into locks_ of the key that was busy
};

} // namespace bufferlock
