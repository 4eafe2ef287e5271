#include "util/interrupt_timer.hpp"

#include "util/clock.hpp"

namespace bufferlock {

namespace {

void on_alarm(int) {} // only here so that SIGALRM interrupts instead of killing

} // namespace

InterruptTimer::InterruptTimer(Nanos first, Nanos interval) {
  struct sigaction sa {};
  sa.sa_handler = on_alarm;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0; // no SA_RESTART: the blocked call must return EINTR
  if (::sigaction(SIGALRM, &sa, &old_action_) != 0) return;

  sigevent sev{};
  sev.sigev_notify = SIGEV_SIGNAL;
  sev.sigev_signo = SIGALRM;
  if (::timer_create(CLOCK_MONOTONIC, &sev, &timer_) != 0) {
    ::sigaction(SIGALRM, &old_action_, nullptr);
    return;
  }
  itimerspec spec{};
  spec.it_value = to_timespec(first.count() > 0 ? first : Nanos(1));
  spec.it_interval = to_timespec(interval);
  if (::timer_settime(timer_, 0, &spec, nullptr) != 0) {
    ::timer_delete(timer_);
    ::sigaction(SIGALRM, &old_action_, nullptr);
    return;
  }
  armed_ = true;
}

InterruptTimer::~InterruptTimer() {
  if (!armed_) return;
  ::timer_delete(timer_);
  ::sigaction(SIGALRM, &old_action_, nullptr);
}

} // namespace bufferlock
