/* bench/clocknow.c — print CLOCK_MONOTONIC in ns, as early as possible.
 * Exec'd by a lock waiter in the hand-off latency benches (bench/file-lock.sh,
 * bench/redis-lock.sh); its start-up (exec + libc init) is part of the
 * measured latency.
 *
 *   clocknow        print the time now
 *   clocknow hold   print "ready", read stdin to EOF, then print the time:
 *                   a lock holder whose end the driver (spawn pair) decides */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "hold") == 0) {
        char buf[512];
        fputs("ready\n", stdout);
        if (fflush(stdout) != 0)
            return 1;
        while (read(0, buf, sizeof buf) > 0)
            ;
    }
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    printf("%lld\n", (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
    return 0;
}
