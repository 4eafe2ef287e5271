/* bench/clocknow.c — print CLOCK_MONOTONIC in ns, as early as possible.
 * Exec'd by a lock waiter in the hand-off latency bench (bench/file-lock.sh);
 * its start-up (exec + libc init) is part of the measured latency. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <time.h>

int main(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    printf("%lld\n", (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
    return 0;
}
