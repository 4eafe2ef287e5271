#!/usr/bin/env bats
# bufferlock cache --output PATH (SPEC §16): the files a build makes are
# stored with the entry and restored on a hit, each PATH as a whole; hostile
# archives are refused and nothing outside PATH is written.

bats_require_minimum_version 1.5.0

load redis_helpers
load cache_helpers

setup_file() {
    redis_setup_file
    # One tree of 2,000 files for the suite: modes, nanosecond mtimes, symlinks.
    python3 - "$BATS_FILE_TMPDIR/tree" <<'PY'
import os, random, sys
root = sys.argv[1]
rnd = random.Random(24)
os.makedirs(root)
dirs = []
for d in range(20):
    p = os.path.join(root, "d%02d" % d, "sub" if d % 3 == 0 else "")
    os.makedirs(p, exist_ok=True)
    dirs.append(p)
n = 0
for d in dirs:
    for f in range(100):
        path = os.path.join(d, "f%03d%s" % (f, ".sh" if f % 7 == 0 else ".txt"))
        if f % 25 == 24:
            os.symlink("f%03d.txt" % (f - 1) if f % 2 else "/nowhere/dangling", path)
        else:
            with open(path, "wb") as out:
                out.write(rnd.randbytes(rnd.randint(0, 3000)))
            os.chmod(path, 0o755 if f % 7 == 0 else (0o600 if f % 5 == 0 else 0o644))
        t = 1_500_000_000_000_000_000 + rnd.randint(0, 10**17)
        os.utime(path, ns=(t, t), follow_symlinks=False)
        n += 1
for dirpath, _, _ in sorted(os.walk(root), reverse=True):
    t = 1_400_000_000_123_456_789 + len(dirpath)
    os.utime(dirpath, ns=(t, t))
assert n == 2000
PY
    FORGE="$(dirname "$BL")/forge_entry"
    [[ -x $FORGE ]] || {
        echo "forge_entry not built next to $BL (configure with -DBUFFERLOCK_TESTS=ON)" >&2
        return 1
    }
    export FORGE
}
teardown_file() { redis_teardown_file; }

setup() {
    cache_setup
    redis_reset_shared
    TREE="$BATS_FILE_TMPDIR/tree"
    K="out-key"
    mkdir -p "$T/w" "$T/outside"
    # mkdist [SRC]: count a run, then copy SRC (default the suite's tree) to ./dist.
    cat >"$T/bin/mkdist" <<EOF
#!/bin/sh
echo "\$\$" >>'$RUNS'
cp -a "\${1:-$TREE}" dist
echo built
EOF
    chmod +x "$T/bin/mkdist"
    MKDIST="$T/bin/mkdist"
}
teardown() {
    track_descendants
    redis_teardown
}

# listing DIR: every name below DIR with its type, mode, mtime (ns) and link target.
listing() {
    (cd "$1" && find . -printf '%p %y %m %T@ %l\n' | LC_ALL=C sort)
}

# assert_same_tree A B: the same bytes, modes, mtimes and symlinks.
assert_same_tree() {
    diff -r --no-dereference "$1" "$2" || fail "trees $1 and $2 differ"
    diff <(listing "$1") <(listing "$2") || fail "modes, mtimes or links of $1 and $2 differ"
}

# in_w ARGS...: `bufferlock cache --cache-dir $C ARGS...` in $T/w.
in_w() {
    (cd "$T/w" && "$BL" cache --cache-dir "$C" "$@")
}

@test "--output dist: 2,000 files restored byte for byte with modes, mtimes and symlinks" {
    run --separate-stderr in_w --output dist "$K" "$MKDIST"
    assert_success
    assert_output built
    assert_runs 1
    assert_same_tree "$TREE" "$T/w/dist"
    rm -rf "$T/w/dist"
    run --separate-stderr in_w --output dist "$K" "$MKDIST"
    assert_success
    assert_output built
    [[ -z $stderr ]] || fail "stderr: $stderr"
    assert_runs 1
    assert_same_tree "$TREE" "$T/w/dist"
    # An existing, different dist is replaced as a whole; nothing is left beside it.
    rm -rf "$T/w/dist" && mkdir -p "$T/w/dist/stale" && : >"$T/w/dist/old"
    run --separate-stderr in_w --output dist "$K" "$MKDIST"
    assert_success
    assert_runs 1
    assert_same_tree "$TREE" "$T/w/dist"
    # The tree it replaced is kept beside it (until the next restore of dist).
    assert_equal "$(ls -A "$T/w")" "$(printf '%s\n' .dist.bufferlock-old dist)"
    assert_equal "$(ls -A "$T/w/.dist.bufferlock-old")" "$(printf '%s\n' old stale)"
}

@test "an --output archive that does not shrink is stored as a plain tar, one that does in zstd; both restore" {
    # The entry's body is the archive alone (no stdout), so a plain tar ends
    # it: its two zero blocks just before the 16-byte trailer.
    # tar_ends_entry KEY: KEY's entry ends in a plain tar
    # the_entry KEY: KEY's one entry (its address holds the --output list)
    the_entry() {
        local e
        e=$(key_entries "$1")
        [[ -n $e && $e != *$'\n'* ]] || fail "expected one entry of $1, found: $e"
        printf '%s\n' "$e"
    }
    tar_ends_entry() { [[ -z $(tail -c 1040 "$(the_entry "$1")" | head -c 1024 | tr -d '\0') ]]; }
    mkdir -p "$T/w/bin" "$T/w/log"
    head -c 3M /dev/urandom >"$T/w/bin/blob"
    seq 1 400000 >"$T/w/log/lines"
    run --separate-stderr in_w --output bin k.raw true
    assert_success
    tar_ends_entry k.raw || fail "the incompressible archive was not stored as a plain tar"
    (($(stat -c %s "$(the_entry k.raw)") < 3 * 1048576 + 8192)) || fail "the plain tar grew"
    run --separate-stderr in_w --output log k.z true
    assert_success
    ! tar_ends_entry k.z || fail "the compressible archive was stored as a plain tar"
    (($(stat -c %s "$(the_entry k.z)") < $(stat -c %s "$T/w/log/lines") / 2)) || fail "not compressed"
    cp -a "$T/w" "$T/expected"
    rm -rf "$T/w/bin" "$T/w/log"
    run --separate-stderr in_w --output bin k.raw false
    assert_success
    run --separate-stderr in_w --output log k.z false
    assert_success
    assert_same_tree "$T/expected/bin" "$T/w/bin"
    assert_same_tree "$T/expected/log" "$T/w/log"
}

@test "--output FILE and several PATHs; a trailing slash names the same PATH" {
    local mk="$T/bin/mk2"
    printf '#!/bin/sh\necho $$ >>%s\nmkdir -p a/b && echo one >a/b/x && printf two >f && chmod 751 f\n' \
        "$RUNS" >"$mk"
    chmod +x "$mk"
    run --separate-stderr in_w --output f --output a/ "$K" "$mk"
    assert_success
    cp -a "$T/w" "$T/expected"
    rm -rf "$T/w/a" "$T/w/f"
    run --separate-stderr in_w --output f --output a/ "$K" "$mk"
    assert_success
    assert_runs 1
    assert_same_tree "$T/expected/a" "$T/w/a"
    cmp "$T/expected/f" "$T/w/f" || fail "f differs"
    assert_equal "$(stat -c '%a %.9Y' "$T/w/f")" "$(stat -c '%a %.9Y' "$T/expected/f")"
    # Other --output PATHs are another entry: built again.
    rm -rf "$T/w/a" "$T/w/f"
    run --separate-stderr in_w --output f "$K" "$mk"
    assert_success
    assert_runs 2
}

# two_lists STORE-ARGS...: callers of one KEY with --output a and with
# --output b, in turn, each served its own entry after its first build.
two_lists() {
    local mk="$T/bin/mkab" i
    printf '#!/bin/sh\necho $$ >>%s\necho A >a && echo B >b && echo built\n' "$RUNS" >"$mk"
    chmod +x "$mk"
    : >"$RUNS"
    in_w "$@" --output a "$K" "$mk" >/dev/null || fail "the build of a failed"
    in_w "$@" --output b "$K" "$mk" >/dev/null || fail "the build of b failed"
    assert_runs 2
    for i in 1 2 3; do
        rm -f "$T/w/a" "$T/w/b"
        run --separate-stderr in_w "$@" --output a "$K" "$mk"
        assert_success
        assert_output built
        assert_stderr_empty
        [[ -e $T/w/a && ! -e $T/w/b ]] || fail "--output a restored: $(ls "$T/w")"
        rm -f "$T/w/a"
        run --separate-stderr in_w "$@" --output b "$K" "$mk"
        assert_success
        assert_stderr_empty
        [[ -e $T/w/b && ! -e $T/w/a ]] || fail "--output b restored: $(ls "$T/w")"
    done
    # Another caller with the same list, elsewhere: a hit too.
    mkdir -p "$T/w2"
    (cd "$T/w2" && "$BL" cache --cache-dir "$C" "$@" --output a "$K" "$mk") >/dev/null ||
        fail "the caller in w2 failed"
    assert_equal "$(cat "$T/w2/a")" A
    assert_runs 2
    # Both entries are listed; --drop KEY removes both.
    run --separate-stderr blc "$@" --list
    assert_success
    assert_equal "$(grep -cE "^[0-9.]+ 6\+1 [0-9]+ - $K\$" <<<"$output")" 2
    run --separate-stderr blc "$@" --drop "$K"
    assert_success
    run --separate-stderr blc "$@" --list
    assert_output ""
}

@test "one KEY, two --output lists: each caller hits after its first build, both entries kept; --drop removes both" {
    two_lists
    two_lists --store redis -r "$REDIS_URL"
    # A call without --output keeps the address it always had: <md5>.entry.
    in_w "$K" echo plain >/dev/null
    assert_equal "$(key_entries "$K")" "$(entry_path "$K")"
}

@test "--stale-if-error with --depends falls back on the newest entry of KEY with the caller's --output list" {
    printf 'v1\n' >"$T/dep"
    in_w --depends "$T/dep" --output a "$K" sh -c 'echo old-a >a; echo out-a' >/dev/null
    sleep 0.05
    in_w --depends "$T/dep" --output b "$K" sh -c 'echo old-b >b; echo out-b' >/dev/null
    printf 'v2\n' >"$T/dep"
    rm -f "$T/w/a" "$T/w/b"
    # The newest entry of KEY is b's; a caller of a falls back on a's.
    run --separate-stderr in_w --depends "$T/dep" --output a --stale-if-error "$K" sh -c 'exit 4'
    assert_success
    assert_output out-a
    assert_equal "$(cat "$T/w/a")" old-a
    [[ ! -e $T/w/b ]] || fail "b's outputs were restored"
    [[ $stderr == *"'$K'"* ]] || fail "no warning: $stderr"
}

@test "a build that leaves PATH missing: one error naming it, nothing stored, status kept" {
    run --separate-stderr in_w --output dist "$K" "$COUNTED"
    assert_failure 69
    assert_equal "$stderr" "bufferlock: --output dist of '$K' is missing after the build; nothing stored"
    [[ -z $(key_entries "$K") ]] || fail "an entry was stored"
    run --separate-stderr in_w --output dist --error-exit 7 "$K" "$COUNTED"
    assert_failure 7
    # A failed command keeps its own status.
    run --separate-stderr in_w --output dist "$K" sh -c 'exit 3'
    assert_failure 3
    run --separate-stderr blc --list
    assert_output ""
    run --separate-stderr in_w --output dist "$K" "$COUNTED"
    assert_failure 69
    assert_runs 3
}

@test "--list shows the number of outputs: SIZE+N in text, \"outputs\" in JSON" {
    in_w --output dist --output dist2 "$K" sh -c 'mkdir dist dist2; echo hi' >/dev/null
    in_w plain echo hi >/dev/null
    run --separate-stderr blc --list
    assert_success
    assert_line --regexp "^[0-9.]+ 3\+2 [0-9]+ - $K\$"
    assert_line --regexp "^[0-9.]+ 3 [0-9]+ - plain\$"
    run --separate-stderr blc --list --json
    assert_success
    assert_equal "$(jq -c '[.entries[] | {key, outputs}] | sort_by(.key)' <<<"$output")" \
        '[{"key":"out-key","outputs":2},{"key":"plain","outputs":null}]'
}

# runner NAME ARGS...: bufferlock cache on runner NAME (its own directory and HOME).
runner() {
    local name=$1
    shift
    mkdir -p "$T/$name/home" "$T/$name/repo"
    (cd "$T/$name/repo" && HOME="$T/$name/home" XDG_CACHE_HOME= "$BL" cache "$@")
}

@test "two runners, one Redis: the second restores what the first built, with no build" {
    run --separate-stderr runner A --store redis -r "$REDIS_URL" --output dist "$K" "$MKDIST"
    assert_success
    run --separate-stderr runner B --store redis -r "$REDIS_URL" --output dist "$K" "$MKDIST"
    assert_success
    assert_output built
    [[ -z $stderr ]] || fail "stderr: $stderr"
    assert_runs 1
    assert_same_tree "$TREE" "$T/B/repo/dist"
    [[ -z $(key_entries "$K" "$T/B/home/.cache/bufferlock") ]] || fail "an entry file on runner B"
}

@test "two runners, one shared cache directory: the second restores with no build" {
    run --separate-stderr runner A --cache-dir "$T/shared" --output dist "$K" "$MKDIST"
    assert_success
    run --separate-stderr runner B --cache-dir "$T/shared" --output dist "$K" "$MKDIST"
    assert_success
    assert_runs 1
    assert_same_tree "$TREE" "$T/B/repo/dist"
}

@test "ten concurrent callers, each in its own directory: one build, ten identical trees" {
    local i
    for ((i = 0; i < 10; i++)); do
        mkdir -p "$T/c$i"
        cd "$T/c$i"
        spawn_caller "$i" --output dist "$K" "$MKDIST"
    done
    cd "$T"
    wait_callers 120
    for ((i = 0; i < 10; i++)); do
        assert_equal "$(caller_status "$i")" 0
        assert_equal "$(cat "$T/out.$i")" built
        assert_same_tree "$TREE" "$T/c$i/dist"
    done
    assert_runs 1
}

# old_and_new: entries "old" and "new" whose dist holds 40 files old-* / new-*.
old_and_new() {
    mkdir -p "$T/old" "$T/new"
    local i
    for ((i = 0; i < 40; i++)); do
        : >"$T/old/old-$i"
        : >"$T/new/new-$i"
    done
    in_w --output dist old "$MKDIST" "$T/old" >/dev/null
    rm -rf "$T/w/dist"
    in_w --output dist new "$MKDIST" "$T/new" >/dev/null
}

@test "a reader listing PATH during restores sees the old names or the new ones, never a mix" {
    old_and_new
    # The reader: every listing of a tree that was in place (PATH, or kept
    # beside it) from before it was opened to after it was read must be all
    # old-* or all new-*, 40 names. A tree that was gone by then was removed
    # by the restore after the one that replaced it (the next case).
    python3 - "$T/w/dist" "$T/w/.dist.bufferlock-old" "$T/stop" >"$T/reader" 2>&1 <<'PY' &
import os, sys
path, kept, stop = sys.argv[1:]
looks = 0
def placed(st):
    for p in (path, kept):
        try:
            s = os.lstat(p)
        except OSError:
            continue
        if (s.st_dev, s.st_ino) == (st.st_dev, st.st_ino):
            return True
    return False
while not os.path.exists(stop):
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as e:
        print("open failed:", e)
        continue
    names = os.listdir(fd)
    st = os.fstat(fd)
    os.close(fd)
    if not placed(st):
        continue
    looks += 1
    n_old = sum(n.startswith("old-") for n in names)
    n_new = sum(n.startswith("new-") for n in names)
    if not ((n_old, n_new) in ((40, 0), (0, 40)) and len(names) == 40):
        print("old=%d new=%d" % (n_old, n_new))
print("looks", looks)
PY
    local reader=$! i
    track_pid "$reader"
    for ((i = 0; i < 30; i++)); do
        in_w --output dist old "$MKDIST" >/dev/null || fail "restore of old failed"
        in_w --output dist new "$MKDIST" >/dev/null || fail "restore of new failed"
    done
    : >"$T/stop"
    wait "$reader"
    assert_runs 2
    [[ $(grep -vc '^looks ' "$T/reader") == 0 ]] || fail "the reader saw: $(sort "$T/reader" | uniq -c | head)"
    (($(awk '/^looks / { print $2 }' "$T/reader") > 10)) || fail "the reader looked too few times: $(cat "$T/reader")"
    # PATH, and the tree the last restore replaced: nothing else beside it.
    assert_equal "$(ls -A "$T/w")" "$(printf '%s\n' .dist.bufferlock-old dist)"
    assert_equal "$(ls "$T/w/.dist.bufferlock-old" | grep -c '^old-')" 40
}

@test "a reader that opened PATH before a restore lists the replaced tree whole; the next restore removes it" {
    old_and_new
    in_w --output dist old "$MKDIST" >/dev/null
    # The reader opens dist (the old tree), and lists it only after a
    # restore has put the new tree in its place.
    python3 - "$T/w/dist" "$T/ready" "$T/go" >"$T/listed" 2>&1 <<'PY' &
import os, sys, time
path, ready, go = sys.argv[1:]
fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
open(ready, "w").close()
for _ in range(60000):
    if os.path.exists(go):
        break
    time.sleep(0.001)
print("\n".join(sorted(os.listdir(fd))))
PY
    local reader=$!
    track_pid "$reader"
    poll_until 10 test -e "$T/ready" || fail "the reader did not start: $(cat "$T/listed")"
    in_w --output dist new "$MKDIST" >/dev/null || fail "restore of new failed"
    : >"$T/go"
    wait "$reader" || fail "the reader failed: $(cat "$T/listed")"
    assert_equal "$(grep -c '^old-' "$T/listed")" 40
    assert_equal "$(wc -l <"$T/listed")" 40
    assert_equal "$(ls "$T/w/dist" | grep -c '^new-')" 40
    assert_equal "$(ls "$T/w/.dist.bufferlock-old" | grep -c '^old-')" 40
    # The next restore keeps what it replaces, and removes the one kept before.
    in_w --output dist old "$MKDIST" >/dev/null || fail "restore of old failed"
    assert_equal "$(ls -A "$T/w")" "$(printf '%s\n' .dist.bufferlock-old dist)"
    assert_equal "$(ls "$T/w/.dist.bufferlock-old" | grep -c '^new-')" 40
    assert_equal "$(ls "$T/w/dist" | grep -c '^old-')" 40
    assert_runs 2
}

# make_mkbig: $T/bin/mkbig counts a build, then makes ./out: 64 MiB of
# random bytes and a small file.
make_mkbig() {
    printf '#!/bin/sh\necho $$ >>%s\nmkdir -p out\nhead -c 64M /dev/urandom >out/big\necho small >out/small\necho built\n' \
        "$RUNS" >"$T/bin/mkbig"
    chmod +x "$T/bin/mkbig"
}

# big_bg: `cache --output out K mkbig` in $T/w in the background, once
# $T/go exists (stop_at makes it); BIG_PID is bufferlock's.
big_bg() {
    rm -f "$T/go"
    (cd "$T/w" && while [ ! -e "$T/go" ]; do sleep 0.01; done &&
        exec "$BL" cache --cache-dir "$C" --output out "$K" "$T/bin/mkbig") \
        </dev/null >"$T/big.out" 2>"$T/big.err" 3>&- &
    BIG_PID=$!
    track_pid "$BIG_PID"
}

@test "SIGINT or SIGTERM during an --output restore: exit 130 / 143, nothing left beside PATH, PATH untouched" {
    make_mkbig
    in_w --output out "$K" "$T/bin/mkbig" >/dev/null || fail "the build failed"
    local ino sig want rc
    ino=$(stat -c %i "$T/w/out")
    for sig in INT TERM; do
        want=130
        [[ $sig == TERM ]] && want=143
        big_bg
        rc=0
        stop_at "$BIG_PID" "$T/w/.out.bufferlock-*/new" || rc=$?
        ((rc == 0)) || fail "the restore was not caught under way ($rc)"
        kill "-$sig" "$BIG_PID"
        kill -CONT "$BIG_PID"
        wait_for_exit "$BIG_PID" 10 || fail "SIG$sig did not end the restore"
        reap "$BIG_PID"
        assert_equal "$REAPED_STATUS" "$want"
        assert_equal "$(ls -A "$T/w")" out
        assert_equal "$(stat -c %i "$T/w/out")" "$ino"
        [[ ! -s $T/big.out ]] || fail "stdout was served: $(cat "$T/big.out")"
        [[ ! -s $T/big.err ]] || fail "stderr: $(cat "$T/big.err")"
    done
    assert_runs 1
}

@test "a restore killed by SIGKILL leaves its tree; the next restore of PATH removes it, never one under way" {
    make_mkbig
    in_w --output out "$K" "$T/bin/mkbig" >/dev/null || fail "the build failed"
    local rc=0 left running mine
    big_bg
    stop_at "$BIG_PID" "$T/w/.out.bufferlock-*/new" || rc=$?
    ((rc == 0)) || fail "the restore was not caught under way ($rc)"
    kill -KILL "$BIG_PID"
    wait_for_exit "$BIG_PID" 10 || fail "SIGKILL did not end it"
    left=$(dirname "$STOP_AT")
    [[ -d $left ]] || fail "no tree left by the killed restore"
    # A restore under way (stopped) keeps its tree while another one runs.
    big_bg
    running=$BIG_PID
    rc=0
    stop_at "$BIG_PID" "$T/w/.out.bufferlock-*/new" 0 "$left" || rc=$?
    ((rc == 0)) || fail "the second restore was not caught under way ($rc)"
    mine=$(dirname "$STOP_AT")
    run --separate-stderr in_w --output out "$K" "$T/bin/mkbig"
    assert_success
    assert_output built
    [[ -z $stderr ]] || fail "stderr: $stderr"
    [[ ! -e $left ]] || fail "the killed restore's tree is still there"
    [[ -d $mine ]] || fail "the tree of a restore under way was removed"
    kill -CONT "$running"
    wait_for_exit "$running" 30 || fail "the stopped restore did not finish"
    reap "$running"
    assert_equal "$REAPED_STATUS" 0
    assert_equal "$(cat "$T/big.out")" built
    assert_equal "$(ls -A "$T/w")" "$(printf '%s\n' .out.bufferlock-old out)"
    assert_runs 1
}

@test "SIGINT while the file store publishes a large --output archive: exit 130, no entry, no temporary file" {
    make_mkbig
    local rc tries
    for ((tries = 0; tries < 5; tries++)); do
        rm -rf "$T/w/out"
        big_bg
        # The archive is copied behind the output into the temporary file.
        rc=0
        stop_at "$BIG_PID" "$C/.tmp-*" $((16 << 20)) || rc=$?
        if ((rc == 2)); then
            wait_for_exit "$BIG_PID" 30 || fail "the build did not finish"
            blc --drop "$K"
            continue
        fi
        ((rc == 0)) || fail "the publish was not caught under way ($rc)"
        kill -INT "$BIG_PID"
        kill -CONT "$BIG_PID"
        wait_for_exit "$BIG_PID" 10 || fail "SIGINT did not end the publish"
        reap "$BIG_PID"
        assert_equal "$REAPED_STATUS" 130
        assert_no_entry "$K"
        assert_equal "$(cat "$T/big.out")" built
        [[ ! -s $T/big.err ]] || fail "stderr: $(cat "$T/big.err")"
        return 0
    done
    fail "the publish was never caught under way in $tries tries"
}

# evil_archive KIND FILE: a tar archive with members "0" (a directory) and a
# hostile one of KIND.
evil_archive() {
    python3 - "$1" "$2" "$T/outside" <<'PY'
import io, sys, tarfile
kind, path, outside = sys.argv[1:]
with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as t:
    d = tarfile.TarInfo("0"); d.type = tarfile.DIRTYPE; d.mode = 0o755
    t.addfile(d)
    def add_file(name, data=b"pwned\n"):
        f = tarfile.TarInfo(name); f.size = len(data); f.mode = 0o644
        t.addfile(f, io.BytesIO(data))
    if kind == "dotdot":
        add_file("0/../x")
    elif kind == "dotdot-top":
        add_file("../x")
    elif kind == "absolute":
        add_file(outside + "/x")
    elif kind == "symlink":
        l = tarfile.TarInfo("0/out"); l.type = tarfile.SYMTYPE; l.linkname = outside
        t.addfile(l)
        add_file("0/out/passwd")
    elif kind == "device":
        c = tarfile.TarInfo("0/null"); c.type = tarfile.CHRTYPE; c.devmajor = 1; c.devminor = 3
        t.addfile(c)
    elif kind == "fifo":
        c = tarfile.TarInfo("0/fifo"); c.type = tarfile.FIFOTYPE
        t.addfile(c)
    elif kind == "hardlink":
        h = tarfile.TarInfo("0/h"); h.type = tarfile.LNKTYPE; h.linkname = "/etc/passwd"
        t.addfile(h)
    elif kind == "benign":
        add_file("0/hello", b"hello\n")
PY
}

# forge_file KIND: KEY's entry in $C, with a stdout "forged" and a KIND archive for --output dist.
forge_file() {
    evil_archive "$1" "$T/evil.tar"
    printf 'forged\n' >"$T/forged.out"
    "$FORGE" "$C" "$K" "$T/forged.out" "$T/evil.tar" dist >"$T/forge.sizes"
}

# forge_redis KIND: the same entry, loaded into the shared Redis as a hash (h, 0, t).
forge_redis() {
    local f="$T/forge" ekey h b
    evil_archive "$1" "$T/evil.tar"
    printf 'forged\n' >"$T/forged.out"
    rm -rf "$f"
    read -r h b < <("$FORGE" "$f" "$K" "$T/forged.out" "$T/evil.tar" dist)
    f=$(key_entries "$K" "$f")
    # <md5>.<address>.entry: the Redis key of the same address.
    ekey=$(basename "$f" .entry)
    ekey="{buffer:lock:${ekey%%.*}}:entry:${ekey#*.}"
    rcli DEL "$ekey" >/dev/null
    head -c "$h" "$f" | rcli -x HSET "$ekey" h >/dev/null
    tail -c +$((h + 1)) "$f" | head -c "$b" | rcli -x HSET "$ekey" 0 >/dev/null
    tail -c 16 "$f" | rcli -x HSET "$ekey" t >/dev/null
}

# assert_refused STORE-ARGS...: the forged entry is refused with one warning,
# rebuilt, and nothing is written outside dist.
assert_refused() {
    run --separate-stderr in_w "$@" --output dist "$K" "$MKDIST"
    assert_success
    assert_output built
    assert_runs 1
    [[ $stderr == "bufferlock: ignoring the cache entry of '$K' ("*"): its outputs: "*"; rebuilding it" ]] ||
        fail "stderr: $stderr"
    assert_equal "$(wc -l <<<"$stderr")" 1
    assert_equal "$(ls -A "$T/outside")" ""
    assert_equal "$(ls -A "$T/w")" dist
    [[ ! -e $T/x ]] || fail "written: $T/x"
    assert_same_tree "$TREE" "$T/w/dist"
}

@test "file store: a forged benign archive is restored (the forging works)" {
    forge_file benign
    run --separate-stderr in_w --output dist "$K" "$MKDIST"
    assert_success
    assert_output forged
    assert_runs 0
    assert_equal "$(cat "$T/w/dist/hello")" hello
    # The same archive in one zstd frame, as entries of earlier versions hold
    # it whatever it contains: restored as well.
    command -v zstd >/dev/null || skip "zstd(1) is not installed"
    rm -rf "$T/w/dist" "$C"
    zstd -q -3 -c "$T/evil.tar" >"$T/evil.tar.zst"
    printf 'forged\n' >"$T/forged.out"
    "$FORGE" "$C" "$K" "$T/forged.out" "$T/evil.tar.zst" dist >/dev/null
    run --separate-stderr in_w --output dist "$K" "$MKDIST"
    assert_success
    assert_output forged
    assert_runs 0
    assert_equal "$(cat "$T/w/dist/hello")" hello
}

@test "file store: hostile archives (.., absolute, through a symlink, device, FIFO, hard link) are refused" {
    local kind
    for kind in dotdot dotdot-top absolute symlink device fifo hardlink; do
        rm -rf "$T/w/dist" "$C" && : >"$RUNS"
        forge_file "$kind"
        assert_refused
    done
}

@test "a planted symlink PATH is replaced, never written through" {
    in_w --output dist "$K" "$MKDIST" >/dev/null
    rm -rf "$T/w/dist"
    ln -s "$T/outside" "$T/w/dist"
    run --separate-stderr in_w --output dist "$K" "$MKDIST"
    assert_success
    assert_runs 1
    assert_equal "$(ls -A "$T/outside")" ""
    [[ -d $T/w/dist && ! -L $T/w/dist ]] || fail "dist is still a link"
    assert_same_tree "$TREE" "$T/w/dist"
}

@test "Redis store: a forged benign entry is restored, hostile ones are refused" {
    forge_redis benign
    run --separate-stderr in_w --store redis -r "$REDIS_URL" --output dist "$K" "$MKDIST"
    assert_success
    assert_output forged
    assert_runs 0
    assert_equal "$(cat "$T/w/dist/hello")" hello
    local kind
    for kind in dotdot absolute symlink device hardlink; do
        rm -rf "$T/w/dist" && : >"$RUNS"
        forge_redis "$kind"
        assert_refused --store redis -r "$REDIS_URL"
    done
}
