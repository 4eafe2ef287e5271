/* bench/redis-floor.c -- the floor of an uncontended Redis lock run, for
 * bench/redis-lock.sh: what its redis-cli recipe does, in one small static
 * process, with no parser, no shell and no checks beyond the replies.
 *
 *   redis-floor PORT KEY CMD [ARG...]
 *
 * Connects to 127.0.0.1:PORT (TCP_NODELAY), sends SET KEY tok NX PX 60000
 * and reads the reply (one round trip), vforks and execs CMD (an absolute
 * path), waits for it, sends the compare-and-delete EVAL and reads the reply
 * (one round trip), and exits: two round trips and one child, the floor the
 * bench compares bufferlock's Redis run with.  Exit status: CMD's, or 1 when
 * the lock was not taken or a step failed (said on stderr).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static int fail(const char *what) {
    fprintf(stderr, "redis-floor: %s\n", what);
    return 1;
}

/* Sends a command and reads its reply (one line: these replies are short)
 * into buf; 0, or -1 on a failure. */
static int round_trip(int fd, const char *cmd, size_t len, char *buf, size_t size) {
    if (write(fd, cmd, len) != (ssize_t)len) return -1;
    size_t got = 0;
    while (got < size - 1) {
        ssize_t n = read(fd, buf + got, size - 1 - got);
        if (n <= 0) return -1;
        got += (size_t)n;
        buf[got] = 0;
        if (strstr(buf, "\r\n")) return 0;
    }
    return -1;
}

/* The command KEY and the rest as one RESP array. */
static size_t resp(char *out, size_t size, int argc, const char **argv) {
    size_t n = (size_t)snprintf(out, size, "*%d\r\n", argc);
    for (int i = 0; i < argc && n < size; i++)
        n += (size_t)snprintf(out + n, size - n, "$%zu\r\n%s\r\n", strlen(argv[i]), argv[i]);
    return n < size ? n : 0;
}

int main(int argc, char **argv) {
    if (argc < 4) return fail("usage: redis-floor PORT KEY CMD [ARG...]");
    const char *key = argv[2];
    char set[512], del[512], reply[256];
    const char *set_argv[] = {"SET", key, "tok", "NX", "PX", "60000"};
    const char *del_argv[] = {"EVAL",
                              "if redis.call(\"get\",KEYS[1])==ARGV[1] then "
                              "return redis.call(\"del\",KEYS[1]) else return 0 end",
                              "1", key, "tok"};
    const size_t set_len = resp(set, sizeof set, 6, set_argv);
    const size_t del_len = resp(del, sizeof del, 5, del_argv);
    if (!set_len || !del_len) return fail("key too long");

    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((unsigned short)atoi(argv[1]))};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) return fail("connect failed");
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);

    if (round_trip(fd, set, set_len, reply, sizeof reply) != 0) return fail("SET failed");
    if (strncmp(reply, "+OK", 3) != 0) return fail("lock busy");

    pid_t pid = vfork();
    if (pid == 0) {
        execve(argv[3], argv + 3, environ);
        _exit(127);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid) status = 1 << 8;

    if (round_trip(fd, del, del_len, reply, sizeof reply) != 0) return fail("release failed");
    if (strncmp(reply, ":1", 2) != 0) return fail("the lock was lost");
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
