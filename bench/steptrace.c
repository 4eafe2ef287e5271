/* bench/steptrace.c -- the code addresses a program executes, for
 * bench/hot-text.sh.
 *
 *   steptrace OUT PROGRAM [ARG...]
 *
 * Runs PROGRAM under ptrace, one instruction at a time, until it exits or
 * execs another program, and writes to OUT every distinct instruction
 * address inside PROGRAM's own file mapping, as an offset from its load
 * address (hex, one per line, in the order first executed).  Single-stepping runs on the real CPU, so
 * the string functions glibc picks for it and the vDSO set-up are seen as
 * a normal run takes them (valgrind sees neither).  A child it forks or
 * vforks is traced too, up to its exec of the command (it shares the code:
 * the child's set-up runs on every run with a child), and then let go.
 * Exit status: 0, or 1 on a failure of its own.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

/* The lowest and highest address of PROGRAM's executable mapping, and its
 * load address (the start of its mapping at file offset 0). */
static int mapping(pid_t pid, const char *exe, uintptr_t *base, uintptr_t *lo, uintptr_t *hi) {
    char path[64], line[4096];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char real[4096];
    if (!realpath(exe, real)) snprintf(real, sizeof real, "%s", exe);
    *base = 0, *lo = 0, *hi = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long a, b, off;
        char perms[8], file[4096] = "";
        if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %4095s", &a, &b, perms, &off, file) < 4) continue;
        if (strcmp(file, real) != 0) continue;
        if (off == 0 && !*base) *base = a;
        if (perms[2] == 'x') *lo = a, *hi = b;
    }
    fclose(f);
    return *base && *hi ? 0 : -1;
}

struct step { uintptr_t addr; size_t seq; };

static int by_addr(const void *x, const void *y) {
    const struct step *a = x, *b = y;
    if (a->addr != b->addr) return a->addr < b->addr ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static int by_seq(const void *x, const void *y) {
    const struct step *a = x, *b = y;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: steptrace OUT PROGRAM [ARG...]\n");
        return 1;
    }
    pid_t pid = fork();
    if (pid < 0) return perror("fork"), 1;
    if (pid == 0) {
        ptrace(PTRACE_TRACEME, 0, 0, 0);
        execvp(argv[2], argv + 2);
        _exit(127);
    }
    int st;
    if (waitpid(pid, &st, 0) < 0 || !WIFSTOPPED(st)) return fprintf(stderr, "steptrace: no exec stop\n"), 1;
    ptrace(PTRACE_SETOPTIONS, pid, 0,
           PTRACE_O_TRACEEXEC | PTRACE_O_EXITKILL | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK);
    uintptr_t base, lo, hi;
    if (mapping(pid, argv[2], &base, &lo, &hi) != 0) return fprintf(stderr, "steptrace: %s not mapped\n", argv[2]), 1;

    size_t n = 0, cap = 1 << 16;
    struct step *seen = malloc(cap * sizeof *seen);
    if (!seen) return 1;
    /* Every traced task is stepped in turn: a stop of one is recorded, then
     * that task is stepped again.  A vfork parent stays blocked in the kernel
     * until its child execs, so the stops come from the child meanwhile.
     * cur is the task whose stop was seen last, 0 when it was a child's end. */
    pid_t cur = pid;
    int sig = 0;
    for (;;) {
        if (cur > 0) {
            struct user_regs_struct r;
            if (ptrace(PTRACE_GETREGS, cur, 0, &r) == 0 && r.rip >= lo && r.rip < hi) {
                if (n == cap && !(seen = realloc(seen, (cap *= 2) * sizeof *seen))) return 1;
                seen[n] = (struct step){r.rip - base, n};
                n++;
            }
            if (ptrace(PTRACE_SINGLESTEP, cur, 0, sig) != 0 && cur == pid) break;
        }
        sig = 0;
        if ((cur = waitpid(-1, &st, __WALL)) < 0) break;
        if (WIFEXITED(st) || WIFSIGNALED(st)) {
            if (cur == pid) break;
            cur = 0; /* a child is gone (its exec failed): wait for the next stop */
            continue;
        }
        if (st >> 8 == (SIGTRAP | (PTRACE_EVENT_EXEC << 8))) {
            if (cur != pid) { /* the child's command: let it run */
                ptrace(PTRACE_DETACH, cur, 0, 0);
                cur = 0;
                continue;
            }
            kill(pid, SIGKILL); /* the command, in place of ours: ours ends here */
            waitpid(pid, &st, 0);
            break;
        }
        int s = WSTOPSIG(st);
        if (s != SIGTRAP && s != SIGSTOP) sig = s; /* SIGSTOP: a new child's first stop */
    }
    /* each address once, at its first execution */
    qsort(seen, n, sizeof *seen, by_addr);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (i == 0 || seen[i].addr != seen[i - 1].addr) seen[m++] = seen[i];
    qsort(seen, m, sizeof *seen, by_seq);
    FILE *out = fopen(argv[1], "w");
    if (!out) return perror(argv[1]), 1;
    for (size_t i = 0; i < m; i++) fprintf(out, "%lx\n", (unsigned long)seen[i].addr);
    return fclose(out) == 0 ? 0 : 1;
}
