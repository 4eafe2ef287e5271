/* bench/spawn.c — tiny timing driver for bench/file-lock.sh, redis-lock.sh
 * and cache.sh.
 *
 * The shell is not used as the timing harness (its fork cost would distort
 * the ratios): this program posix_spawn()s the command itself and collects
 * wall time (CLOCK_MONOTONIC) and ru_maxrss (wait4) per run.
 *
 *   spawn run N [null|pipe] -- CMD ARGS...
 *       Run CMD N times, one after the other.  One line per run on stdout:
 *       "<wall_ns> <maxrss_kib> <wait_status>".  CMD's stdout is the
 *       driver's, or with "null" /dev/null, or with "pipe" a pipe that the
 *       driver reads to EOF (counted in the wall time) before wait4; the
 *       line then has a fourth field, the byte count.
 *
 *   spawn par P N -- CMD ARGS...
 *       Fork P workers; each runs CMD N times sequentially.  Prints one line
 *       "<wall_ns> <failed_runs>" (wall = first fork .. last worker reaped).
 *
 *   spawn handoff REPS LOCKFILE -- CMD ARGS...
 *       REPS times: take flock(LOCK_EX) on LOCKFILE, spawn CMD (a waiter that
 *       should block on the same lock, then exec a program printing
 *       CLOCK_MONOTONIC in ns on stdout), wait (up to 300 ms) until
 *       /proc/locks shows a blocked FLOCK waiter on LOCKFILE's inode, wait
 *       1 ms more, read CLOCK_MONOTONIC and
 *       release the lock with close().  Prints one line per rep:
 *       "<latency_ns> <waiter_seen_blocked 0|1> <wait_status>"
 *       where latency = waiter's printed time - release time.
 *
 *   spawn herd P OUTDIR -- CMD ARGS...
 *       Start P copies of CMD at once (stdout of copy i to OUTDIR/out.i) and
 *       wait for all.  Prints "<wall_ns> <failed> <launch_ns>": wall = first
 *       spawn .. last reaped, launch = first spawn .. last spawn.
 *
 *   spawn pair DELAY_MS -- HOLDER ARGS... ::: WAITER ARGS...
 *       Hand-off between two lock users: HOLDER prints "ready" under the
 *       lock and, at EOF on its stdin, its CLOCK_MONOTONIC ("clocknow hold").
 *       The driver starts WAITER after "ready", sleeps DELAY_MS, closes
 *       HOLDER's stdin.  Prints "<latency_ns> <waiter_was_waiting 0|1>
 *       <holder_status> <waiter_status>", latency = the time WAITER printed
 *       - HOLDER's time.
 *
 *   spawn rss
 *       Print this driver's own peak RSS (VmHWM, KiB).  The kernel folds the
 *       pre-exec image's RSS into a child's ru_maxrss, and posix_spawn's
 *       child shares the driver's memory until it execs, so no ru_maxrss
 *       reported by this driver can be below roughly this value.
 *
 * Every child is reaped by pid.  On a timeout, SIGINT, SIGTERM or SIGHUP the
 * children are killed by pid (par: by the process group each worker leads,
 * which holds its commands; herd/pair: by the process group each child
 * leads) and reaped before the driver exits.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void die(const char *what)
{
    fprintf(stderr, "spawn: %s: %s\n", what, strerror(errno));
    exit(2);
}

static void usage(void)
{
    fprintf(stderr,
            "usage: spawn run N [null|pipe] -- CMD...\n"
            "       spawn par P N -- CMD...\n"
            "       spawn handoff REPS LOCKFILE -- CMD...\n"
            "       spawn herd P OUTDIR -- CMD...\n"
            "       spawn pair DELAY_MS -- HOLDER... ::: WAITER...\n"
            "       spawn rss\n");
    exit(2);
}

static long num(const char *s)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < 0)
        usage();
    return v;
}

static pid_t spawn_cmd(char **argv, posix_spawn_file_actions_t *fa,
                       posix_spawnattr_t *attr)
{
    pid_t pid;
    int rc = posix_spawn(&pid, argv[0], fa, attr, argv, environ);
    if (rc != 0) {
        errno = rc;
        fprintf(stderr, "spawn: posix_spawn %s: %s\n", argv[0], strerror(rc));
        return -1;
    }
    return pid;
}

static pid_t waitpid_eintr(pid_t pid, int *status, struct rusage *ru)
{
    pid_t r;
    do
        r = wait4(pid, status, 0, ru);
    while (r < 0 && errno == EINTR);
    return r;
}

/* Wait for *pid (which must work), mark the slot done (0); its status. */
static int reap(pid_t *pid)
{
    int status = 0;
    if (waitpid_eintr(*pid, &status, NULL) != *pid)
        die("waitpid");
    *pid = 0;
    return status;
}

static void flush_stdout(void)
{
    if (fflush(stdout) != 0)
        die("stdout");
}

/* Block SIGINT, SIGTERM and SIGHUP (and SIGALRM if `alrm`); *old gets the
 * mask to restore. */
static void block_stop_signals(sigset_t *old, int alrm)
{
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGHUP);
    if (alrm)
        sigaddset(&stop, SIGALRM);
    sigprocmask(SIG_BLOCK, &stop, old);
}

/* The end of a stop-signal handler: write the timeout or the signal message
 * (by `sig`) to stderr and exit 3.  Async-signal-safe. */
static void stopped(int sig, const char *on_timeout, const char *on_signal)
{
    const char *msg = sig == SIGALRM ? on_timeout : on_signal;
    size_t len = 0;
    while (msg[len])
        len++;
    ssize_t w = write(2, msg, len);
    (void)w;
    _exit(3);
}

/* Kill each of the n process groups led by pids[] (0: none) and reap every
 * child (as a child subreaper that includes their orphaned commands). */
static void kill_groups(const pid_t *pids, int n)
{
    for (int i = 0; i < n; i++)
        if (pids[i] > 0)
            kill(-pids[i], SIGKILL);
    while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
        ;
}

/* The one child being waited for in run/handoff: killed by pid on timeout. */
static pid_t cur_child = -1;

static void child_timeout(int sig)
{
    if (cur_child > 0)
        kill(cur_child, SIGKILL);
    stopped(sig, "spawn: timeout (30 s), child killed\n",
            "spawn: signalled, child killed\n");
}

/* SIGALRM (timeout) and the usual termination signals run `handler`. */
static void on_stop_signals(void (*handler)(int))
{
    signal(SIGALRM, handler);
    signal(SIGINT, handler);
    signal(SIGTERM, handler);
    signal(SIGHUP, handler);
}

/* ---- run ---------------------------------------------------------------- */

enum out_mode { OUT_INHERIT, OUT_NULL, OUT_PIPE };

/* Read fd to EOF, discarding; returns the byte count (-1 on error). */
static long long drain(int fd)
{
    static char buf[1 << 17];
    long long total = 0;
    for (;;) {
        ssize_t r = read(fd, buf, sizeof buf);
        if (r > 0)
            total += r;
        else if (r == 0)
            return total;
        else if (errno != EINTR)
            return -1;
    }
}

static int mode_run(long n, enum out_mode out, char **cmd)
{
    int failures = 0;
    int nullfd = -1;
    if (out == OUT_NULL &&
        (nullfd = open("/dev/null", O_WRONLY | O_CLOEXEC)) < 0)
        die("/dev/null");
    on_stop_signals(child_timeout);
    for (long i = 0; i < n; i++) {
        struct rusage ru;
        int status = 0;
        int pfd[2] = {-1, -1};
        posix_spawn_file_actions_t fa, *fap = NULL;
        if (out != OUT_INHERIT) {
            posix_spawn_file_actions_init(&fa);
            fap = &fa;
        }
        if (out == OUT_NULL)
            posix_spawn_file_actions_adddup2(&fa, nullfd, 1);
        alarm(30);
        int64_t t0 = now_ns();
        if (out == OUT_PIPE) {
            if (pipe2(pfd, O_CLOEXEC) < 0)
                die("pipe");
            posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
        }
        pid_t pid = cur_child = spawn_cmd(cmd, fap, NULL);
        if (pid < 0)
            return 2;
        long long bytes = 0;
        if (out == OUT_PIPE) {
            close(pfd[1]);
            bytes = drain(pfd[0]);
            close(pfd[0]);
        }
        if (waitpid_eintr(pid, &status, &ru) != pid)
            die("wait4");
        int64_t t1 = now_ns();
        cur_child = -1;
        alarm(0);
        if (fap)
            posix_spawn_file_actions_destroy(fap);
        if (status != 0)
            failures++;
        if (out == OUT_PIPE)
            printf("%lld %ld %d %lld\n", (long long)(t1 - t0), ru.ru_maxrss,
                   status, bytes);
        else
            printf("%lld %ld %d\n", (long long)(t1 - t0), ru.ru_maxrss,
                   status);
    }
    flush_stdout();
    if (failures)
        fprintf(stderr, "spawn: %d of %ld runs of %s exited non-zero\n",
                failures, n, cmd[0]);
    return failures ? 1 : 0;
}

/* ---- par ---------------------------------------------------------------- */

#define MAXP 64
static pid_t workers[MAXP];
static int nworkers;

static void kill_workers(int sig)
{
    kill_groups(workers, nworkers); /* each worker leads its own group */
    stopped(sig, "spawn: par: timeout, workers killed\n",
            "spawn: par: signalled, workers killed\n");
}

static int mode_par(long p, long n, char **cmd, unsigned timeout_s)
{
    if (p < 1 || p > MAXP)
        usage();
    /* Workers lead their own process groups (so a timeout can kill each
     * with its command), which also keeps a terminal's ^C from reaching
     * them: the handler kills them instead. */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    on_stop_signals(kill_workers);
    sigset_t old;
    block_stop_signals(&old, 0); /* until every worker is recorded */
    int64_t t0 = now_ns();
    for (long i = 0; i < p; i++) {
        pid_t w = fork();
        if (w < 0)
            die("fork");
        if (w == 0) {
            on_stop_signals(SIG_DFL);
            sigprocmask(SIG_SETMASK, &old, NULL);
            setpgid(0, 0);
            int bad = 0;
            for (long j = 0; j < n; j++) {
                int status;
                pid_t pid = spawn_cmd(cmd, NULL, NULL);
                if (pid < 0)
                    _exit(255);
                if (waitpid_eintr(pid, &status, NULL) != pid)
                    _exit(255);
                if (status != 0 && bad < 254)
                    bad++;
            }
            _exit(bad);
        }
        setpgid(w, w); /* also in the parent: no race with kill_workers */
        workers[nworkers++] = w;
    }
    sigprocmask(SIG_SETMASK, &old, NULL);
    alarm(timeout_s);
    long bad = 0;
    for (int i = 0; i < nworkers; i++) {
        int status = reap(&workers[i]);
        if (!WIFEXITED(status))
            bad += n;
        else
            bad += WEXITSTATUS(status);
    }
    alarm(0);
    int64_t t1 = now_ns();
    printf("%lld %ld\n", (long long)(t1 - t0), bad);
    return bad ? 1 : 0;
}

/* Read fd into buf, which holds len bytes already, until EOF, a full buf
 * (cap bytes with the NUL) or, if `line`, a newline in buf; NUL-terminate
 * it.  Returns the new length. */
static size_t read_more(int fd, char *buf, size_t len, size_t cap, int line)
{
    ssize_t r;
    while (len < cap - 1 && !(line && memchr(buf, '\n', len)) &&
           ((r = read(fd, buf + len, cap - 1 - len)) > 0 ||
            (r < 0 && errno == EINTR)))
        if (r > 0)
            len += (size_t)r;
    buf[len] = '\0';
    return len;
}

/* The number at the start of buf's first len bytes and the rest of fd (up
 * to EOF); -1 if there is none. */
static long long read_number(int fd, char *buf, size_t len, size_t cap)
{
    read_more(fd, buf, len, cap, 0);
    char *end;
    long long v = strtoll(buf, &end, 10);
    return end == buf ? -1 : v;
}

/* ---- handoff ------------------------------------------------------------ */

/* Is there a blocked FLOCK waiter ("->") on inode `ino` in /proc/locks? */
static int waiter_blocked(unsigned long long ino)
{
    char buf[1 << 16];
    int fd = open("/proc/locks", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t len = 0;
    ssize_t r;
    while (len < sizeof buf - 1 &&
           (r = read(fd, buf + len, sizeof buf - 1 - len)) > 0)
        len += (size_t)r;
    close(fd);
    buf[len] = '\0';
    char want[48];
    snprintf(want, sizeof want, ":%llu ", ino);
    for (char *line = buf; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        if (strstr(line, "-> FLOCK") && strstr(line, want))
            return 1;
        line = nl ? nl + 1 : NULL;
    }
    return 0;
}

static int mode_handoff(long reps, const char *lockfile, char **cmd)
{
    int failures = 0;
    on_stop_signals(child_timeout);
    for (long i = 0; i < reps; i++) {
        int lfd = open(lockfile, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (lfd < 0)
            die(lockfile);
        if (flock(lfd, LOCK_EX) < 0)
            die("flock");
        struct stat st;
        if (fstat(lfd, &st) < 0)
            die("fstat");

        int pfd[2];
        if (pipe2(pfd, O_CLOEXEC) < 0)
            die("pipe");
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
        alarm(30);
        cur_child = spawn_cmd(cmd, &fa, NULL);
        posix_spawn_file_actions_destroy(&fa);
        close(pfd[1]);
        if (cur_child < 0)
            return 2;

        /* Wait (up to 300 ms) until the waiter is blocked in the kernel;
         * a waiter that polls with LOCK_NB never shows up as blocked. */
        int seen = 0, reaped = 0, status = 0;
        int64_t deadline = now_ns() + 300000000LL;
        while (now_ns() < deadline) {
            int b = waiter_blocked((unsigned long long)st.st_ino);
            if (b != 0) {
                seen = b > 0;
                break;
            }
            if (waitpid(cur_child, &status, WNOHANG) == cur_child) {
                reaped = 1; /* waiter already gone: it never blocked */
                break;
            }
            struct timespec ts = {0, 100000}; /* 100 us */
            nanosleep(&ts, NULL);
        }
        /* Let it sit blocked a moment (longer if /proc/locks told nothing). */
        struct timespec settle = {0, seen ? 1000000 : 20000000};
        nanosleep(&settle, NULL);

        int64_t t_release = now_ns();
        close(lfd); /* releases the flock: the waiter may run now */

        char out[128];
        long long t_start = read_number(pfd[0], out, 0, sizeof out);
        close(pfd[0]);
        if (!reaped &&
            waitpid_eintr(cur_child, &status, NULL) != cur_child)
            die("waitpid");
        cur_child = -1;
        alarm(0);

        if (t_start < 0 || status != 0) {
            failures++;
            printf("nan %d %d\n", seen, status);
            continue;
        }
        printf("%lld %d %d\n", t_start - (long long)t_release, seen, status);
    }
    flush_stdout();
    return failures ? 1 : 0;
}

/* ---- herd / pair: several children at once ------------------------------ */

/* Children of herd/pair, each leading its own process group (so a timeout
 * also kills what it started); killed by group and reaped on a timeout. */
#define MAXKIDS 1024
static pid_t kids[MAXKIDS];
static int nkids;

static void kill_kids(int sig)
{
    kill_groups(kids, nkids);
    stopped(sig, "spawn: timeout, children killed\n",
            "spawn: signalled, children killed\n");
}

/* posix_spawn CMD as a new process-group leader, recorded in kids[];
 * stdin/stdout are dup2'ed from in_fd/out_fd when >= 0. */
static pid_t spawn_kid(char **cmd, int in_fd, int out_fd)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
    if (in_fd >= 0)
        posix_spawn_file_actions_adddup2(&fa, in_fd, 0);
    if (out_fd >= 0)
        posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
    sigset_t old;
    block_stop_signals(&old, 1); /* until the pid is recorded */
    pid_t pid = spawn_cmd(cmd, &fa, &attr);
    if (pid > 0 && nkids < MAXKIDS)
        kids[nkids++] = pid;
    sigprocmask(SIG_SETMASK, &old, NULL);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    return pid;
}

static void forget_kid(pid_t pid)
{
    for (int i = 0; i < nkids; i++)
        if (kids[i] == pid)
            kids[i] = 0;
}

/* Reap one of kids[] by pid; its status. */
static int reap_kid(pid_t pid)
{
    pid_t slot = pid;
    int status = reap(&slot);
    forget_kid(pid);
    return status;
}

/*   spawn herd P OUTDIR -- CMD...
 * Start P copies of CMD at once (stdout of copy i to OUTDIR/out.i), wait
 * for all.  Prints "<wall_ns> <failed> <launch_ns>": wall = first spawn ..
 * last reaped, launch = first spawn .. last spawn. */
static int mode_herd(long p, const char *outdir, char **cmd)
{
    if (p < 1 || p > MAXKIDS)
        usage();
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    on_stop_signals(kill_kids);
    alarm(60);
    int64_t t0 = now_ns(), t_launch = t0;
    for (long i = 0; i < p; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/out.%ld", outdir, i);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0)
            die(path);
        if (spawn_kid(cmd, -1, fd) < 0)
            kill_kids(SIGTERM);
        t_launch = now_ns();
        close(fd);
    }
    long bad = 0;
    for (int i = 0; i < nkids; i++)
        if (reap(&kids[i]) != 0)
            bad++;
    int64_t t1 = now_ns();
    alarm(0);
    printf("%lld %ld %lld\n", (long long)(t1 - t0), bad,
           (long long)(t_launch - t0));
    return bad ? 1 : 0;
}

/*   spawn pair DELAY_MS -- HOLDER... ::: WAITER...
 * Hand-off between two lock users.  HOLDER must print a line "ready" once
 * it runs under the lock, then, when its stdin reaches EOF, its
 * CLOCK_MONOTONIC in ns (bench/clocknow.c "hold" does this) and exit.
 * WAITER must wait for the same lock and print CLOCK_MONOTONIC once it has
 * it.  The driver starts HOLDER, waits for "ready", starts WAITER, sleeps
 * DELAY_MS (WAITER is then waiting), closes HOLDER's stdin and collects
 * both.  Prints "<latency_ns> <waiter_was_waiting 0|1> <holder_status>
 * <waiter_status>", latency = WAITER's time - HOLDER's last time ("nan"
 * if either printed nothing). */
static int mode_pair(long delay_ms, char **holder, char **waiter)
{
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    on_stop_signals(kill_kids);
    alarm(30);
    int in[2], hout[2], wout[2];
    if (pipe2(in, O_CLOEXEC) < 0 || pipe2(hout, O_CLOEXEC) < 0 ||
        pipe2(wout, O_CLOEXEC) < 0)
        die("pipe");
    pid_t h = spawn_kid(holder, in[0], hout[1]);
    close(in[0]);
    close(hout[1]);
    if (h < 0)
        kill_kids(SIGTERM);
    char buf[256];
    size_t len = read_more(hout[0], buf, 0, sizeof buf, 1);
    int ready = strncmp(buf, "ready\n", 6) == 0;
    pid_t w = -1;
    int waiting = 0, w_reaped = 0, ws = -1;
    if (ready) {
        w = spawn_kid(waiter, -1, wout[1]);
        if (w < 0)
            kill_kids(SIGTERM);
        struct timespec ts = {delay_ms / 1000, (delay_ms % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
            ;
        pid_t r2 = waitpid(w, &ws, WNOHANG);
        waiting = r2 == 0; /* still running */
        w_reaped = r2 == w;
    } else {
        fprintf(stderr, "spawn: pair: holder did not print \"ready\"\n");
    }
    close(wout[1]);
    close(in[1]); /* holder's command prints its time and exits */
    /* The rest of the "ready" read, then the time (to EOF: the holder's
     * bufferlock also has this pipe, so EOF = it released and exited). */
    char *nl = strchr(buf, '\n');
    size_t rest = nl ? len - (size_t)(nl + 1 - buf) : 0;
    if (nl)
        memmove(buf, nl + 1, rest);
    long long t_hold = read_number(hout[0], buf, rest, sizeof buf);
    close(hout[0]);
    long long t_wait = w > 0 ? read_number(wout[0], buf, 0, sizeof buf) : -1;
    close(wout[0]);
    int hs = reap_kid(h);
    if (w_reaped)
        forget_kid(w);
    else if (w > 0)
        ws = reap_kid(w);
    alarm(0);
    if (t_hold < 0 || t_wait < 0)
        printf("nan %d %d %d\n", waiting, hs, ws);
    else
        printf("%lld %d %d %d\n", t_wait - t_hold, waiting, hs, ws);
    flush_stdout();
    return (t_hold < 0 || t_wait < 0 || hs != 0 || ws != 0) ? 1 : 0;
}

/* ---- main --------------------------------------------------------------- */

int main(int argc, char **argv)
{
    if (argc < 2)
        usage();
    const char *mode = argv[1];
    if (strcmp(mode, "rss") == 0) {
        /* VmHWM, not getrusage(): after execve ru_maxrss also covers the
         * pre-exec image (the shell that started us). */
        char line[256];
        FILE *f = fopen("/proc/self/status", "r");
        while (f && fgets(line, sizeof line, f))
            if (strncmp(line, "VmHWM:", 6) == 0) {
                printf("%ld\n", strtol(line + 6, NULL, 10));
                return 0;
            }
        puts("0");
        return 0;
    }
    if (strcmp(mode, "pair") == 0) {
        /* pair DELAY_MS -- HOLDER... ::: WAITER... */
        if (argc < 7 || strcmp(argv[3], "--") != 0)
            usage();
        char **holder = argv + 4, **waiter = NULL;
        for (char **a = holder; *a; a++)
            if (strcmp(*a, ":::") == 0) {
                *a = NULL;
                waiter = a + 1;
                break;
            }
        if (!waiter || !holder[0] || !waiter[0])
            usage();
        if (holder[0][0] != '/' || waiter[0][0] != '/') {
            fprintf(stderr, "spawn: commands must be absolute paths\n");
            return 2;
        }
        return mode_pair(num(argv[2]), holder, waiter);
    }
    /* run N [null|pipe] -- CMD: the optional word sets the command's stdout */
    enum out_mode out = OUT_INHERIT;
    if (strcmp(mode, "run") == 0 && argc > 4 && strcmp(argv[3], "--") != 0) {
        if (strcmp(argv[3], "null") == 0)
            out = OUT_NULL;
        else if (strcmp(argv[3], "pipe") == 0)
            out = OUT_PIPE;
        else
            usage();
    }
    int nfixed = strcmp(mode, "run") == 0       ? 1 + (out != OUT_INHERIT)
                 : strcmp(mode, "par") == 0     ? 2
                 : strcmp(mode, "handoff") == 0 ? 2
                 : strcmp(mode, "herd") == 0    ? 2
                                                : -1;
    if (nfixed < 0 || argc < 2 + nfixed + 2 ||
        strcmp(argv[2 + nfixed], "--") != 0)
        usage();
    char **cmd = argv + 2 + nfixed + 1;
    if (cmd[0][0] != '/') {
        fprintf(stderr, "spawn: command must be an absolute path: %s\n", cmd[0]);
        return 2;
    }
    if (strcmp(mode, "run") == 0)
        return mode_run(num(argv[2]), out, cmd);
    if (strcmp(mode, "par") == 0)
        return mode_par(num(argv[2]), num(argv[3]), cmd, 600);
    if (strcmp(mode, "herd") == 0)
        return mode_herd(num(argv[2]), argv[3], cmd);
    return mode_handoff(num(argv[2]), argv[3], cmd);
}
