#!/usr/bin/env bats
# The Debian package: packaging/build-deb.sh turns this tree into a .deb
# (once, in setup_file), which is unpacked with dpkg -x into a scratch root
# and checked: the binary runs and says its version, and the man page and the
# bash, zsh and fish completions are where Debian's tools look for them.
# The .deb also passes lintian without errors, and the RPM spec is built into
# a binary RPM with rpmbuild (packaging/build-rpm.sh) whose files are listed.
# Needs dpkg-dev and debhelper besides the build dependencies, lintian and rpm
# for their tests (each skipped with a reason without them).

load helpers

setup_file() {
    export PKG_OUT="$BATS_FILE_TMPDIR/debs"
    export PKG_ROOT="$BATS_FILE_TMPDIR/root"
    export PKG_LOG="$BATS_FILE_TMPDIR/build.log"
    export PKG_SKIP=""
    local tool
    for tool in dpkg-buildpackage:dpkg-dev dh:debhelper dpkg-deb:dpkg; do
        if ! command -v "${tool%%:*}" >/dev/null; then
            PKG_SKIP="${tool%%:*} is not installed (Debian package ${tool#*:})"
            return 0
        fi
    done
    local repo
    repo="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
    # CTest gives each suite 600 s; the build takes well under a minute here.
    # setup_file runs under errexit: keep the status, so that each test fails
    # with the build's own log instead of a bare "setup_file failed".
    local status=0
    JOBS=$(nproc) TMPDIR="$BATS_FILE_TMPDIR" timeout 480 \
        "$repo/packaging/build-deb.sh" "$PKG_OUT" >"$BATS_FILE_TMPDIR/deb-path" 2>"$PKG_LOG" || status=$?
    echo "$status" >"$BATS_FILE_TMPDIR/build-status"
    # The RPM from packaging/bufferlock.spec, built with Debian's rpmbuild.
    if command -v rpmbuild >/dev/null; then
        status=0
        JOBS=$(nproc) TMPDIR="$BATS_FILE_TMPDIR" timeout 480 "$repo/packaging/build-rpm.sh" \
            "$BATS_FILE_TMPDIR/rpms" >"$BATS_FILE_TMPDIR/rpm-path" 2>"$BATS_FILE_TMPDIR/rpm.log" || status=$?
        echo "$status" >"$BATS_FILE_TMPDIR/rpm-status"
    fi
}

# The .deb that setup_file built, in $DEB; fails with the build's log when
# there is none.
built_deb() {
    [[ -z $PKG_SKIP ]] || skip "$PKG_SKIP"
    local status
    status=$(cat "$BATS_FILE_TMPDIR/build-status")
    [[ $status -eq 0 ]] || fail "packaging/build-deb.sh failed ($status): $(tail -n 30 "$PKG_LOG")"
    DEB=$(head -n 1 "$BATS_FILE_TMPDIR/deb-path")
    [[ -f $DEB ]] || fail "build-deb.sh printed no .deb: '$DEB'"
}

# The package unpacked in $PKG_ROOT (once).
unpacked() {
    built_deb
    if [[ ! -d $PKG_ROOT/usr ]]; then
        mkdir -p "$PKG_ROOT"
        dpkg -x "$DEB" "$PKG_ROOT" || fail "dpkg -x $DEB failed"
    fi
}

project_version() {
    sed -nE 's/^project\(bufferlock VERSION ([0-9.]+).*/\1/p' "$REPO_ROOT/CMakeLists.txt"
}

@test "debian/changelog and the RPM spec carry the project's version" {
    local version
    version=$(project_version)
    [[ -n $version ]] || fail "no version in CMakeLists.txt's project()"
    assert_equal "$(sed -nE '1s/^bufferlock \(([^)]+)\).*/\1/p' "$REPO_ROOT/packaging/debian/changelog")" "$version"
    assert_equal "$(sed -nE 's/^Version: +//p' "$REPO_ROOT/packaging/bufferlock.spec")" "$version"
}

@test "build-deb.sh makes bufferlock_VERSION_ARCH.deb, VERSION the project's" {
    built_deb
    local version arch
    version=$(project_version)
    [[ -n $version ]] || fail "no version in CMakeLists.txt's project()"
    arch=$(dpkg --print-architecture)
    assert_equal "$(basename "$DEB")" "bufferlock_${version}_${arch}.deb"
    assert_equal "$(dpkg-deb -f "$DEB" Package)" bufferlock
    assert_equal "$(dpkg-deb -f "$DEB" Version)" "$version"
    assert_equal "$(dpkg-deb -f "$DEB" Architecture)" "$arch"
    [[ $(dpkg-deb -f "$DEB" Depends) == *libc6* ]] || fail "Depends: $(dpkg-deb -f "$DEB" Depends)"
}

@test "build-deb.sh leaves the source tree as it was: no debian/, no build directory" {
    built_deb
    [[ ! -e $REPO_ROOT/debian ]] || fail "debian/ left at the top of the tree"
    ! compgen -G "$REPO_ROOT/obj-*" >/dev/null || fail "obj-* build directory left in the tree"
}

@test "the packaged binary runs and says the project's version and both backends" {
    unpacked
    run --separate-stderr "$PKG_ROOT/usr/bin/bufferlock" --version
    assert_success
    assert_line --index 0 "bufferlock $(project_version)"
    assert_line --partial "backends: file, redis"
    [[ -z $stderr ]] || fail "stderr: $stderr"
    run --separate-stderr "$PKG_ROOT/usr/bin/bufferlock" -d "$D" "$K" echo locked
    assert_success
    assert_output locked
}

@test "the package holds the man page, compressed, at usr/share/man/man1" {
    unpacked
    local page=$PKG_ROOT/usr/share/man/man1/bufferlock.1.gz
    assert_file_exists "$page"
    cmp <(zcat "$page") "$REPO_ROOT/man/bufferlock.1" || fail "the packaged man page differs from man/bufferlock.1"
}

@test "the package holds the bash, zsh and fish completions where the shells look" {
    unpacked
    local share=$PKG_ROOT/usr/share
    assert_file_exists "$share/bash-completion/completions/bufferlock"
    assert_file_exists "$share/zsh/vendor-completions/_bufferlock"
    assert_file_exists "$share/fish/vendor_completions.d/bufferlock.fish"
    cmp "$share/bash-completion/completions/bufferlock" "$REPO_ROOT/completions/bufferlock.bash"
    cmp "$share/zsh/vendor-completions/_bufferlock" "$REPO_ROOT/completions/_bufferlock"
    cmp "$share/fish/vendor_completions.d/bufferlock.fish" "$REPO_ROOT/completions/bufferlock.fish"
}

@test "the package's files are the binary, the man page, the completions and the docs" {
    built_deb
    # dh_compress gzips docs over 4 KiB: README.md may come either way.
    dpkg-deb -c "$DEB" | awk '$1 !~ /^d/ { sub(/^\.\//, "", $6); sub(/README\.md\.gz$/, "README.md", $6); print $6 }' |
        sort >"$T/files"
    cat >"$T/expected" <<'EOF'
usr/bin/bufferlock
usr/share/bash-completion/completions/bufferlock
usr/share/doc/bufferlock/README.md
usr/share/doc/bufferlock/changelog.gz
usr/share/doc/bufferlock/copyright
usr/share/fish/vendor_completions.d/bufferlock.fish
usr/share/man/man1/bufferlock.1.gz
usr/share/zsh/vendor-completions/_bufferlock
EOF
    diff "$T/expected" "$T/files" || fail "unexpected files in the package (see the diff above)"
}

@test "lintian finds no errors in the .deb (warnings are listed)" {
    built_deb
    command -v lintian >/dev/null || skip "lintian is not installed"
    run lintian --fail-on error --tag-display-limit 0 --display-info "$DEB"
    # The warnings and notes, for the log (bats shows them on failure; build.sh counts them).
    printf '# lintian: %s\n' "${lines[@]}" >&3
    assert_success
    refute_line --regexp '^E: '
}

@test "rpmbuild makes a binary RPM holding the binary, the man page and the completions" {
    command -v rpmbuild >/dev/null || skip "rpmbuild is not installed (Debian package rpm)"
    local status rpm
    status=$(cat "$BATS_FILE_TMPDIR/rpm-status")
    [[ $status -eq 0 ]] || fail "packaging/build-rpm.sh failed ($status): $(tail -n 30 "$BATS_FILE_TMPDIR/rpm.log")"
    rpm=$(head -n 1 "$BATS_FILE_TMPDIR/rpm-path")
    assert_equal "$(basename "$rpm")" "bufferlock-$(project_version)-1.$(uname -m).rpm"
    run rpm -qlp "$rpm"
    assert_success
    assert_line /usr/bin/bufferlock
    assert_line --regexp '^/usr/share/man/man1/bufferlock\.1(\.gz)?$'
    assert_line /usr/share/bash-completion/completions/bufferlock
    assert_line /usr/share/zsh/site-functions/_bufferlock
    assert_line /usr/share/fish/vendor_completions.d/bufferlock.fish
}

@test "a plain cmake configure without the test dependencies leaves the tests out, with one message" {
    local repo out
    repo="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
    out="$BATS_TEST_TMPDIR/plain"
    # As on a machine without libgtest-dev and nlohmann-json3-dev.
    run cmake -S "$repo" -B "$out" -DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON \
        -DCMAKE_DISABLE_FIND_PACKAGE_nlohmann_json=ON
    assert_success
    assert_equal "$(grep -c 'tests left out' <<<"$output")" 1
    assert_output --partial 'tests left out: GoogleTest (libgtest-dev), nlohmann-json (nlohmann-json3-dev) not found'
    assert_output --partial 'tests OFF'
    run cmake --build "$out" --target help
    assert_success
    assert_line --partial 'bufferlock'
    refute_output --partial 'unit_tests'
    # BUILD_TESTING=OFF, CTest's convention, leaves them out as well.
    run cmake -S "$repo" -B "$BATS_TEST_TMPDIR/off" -DBUILD_TESTING=OFF
    assert_success
    assert_output --partial 'tests OFF'
    refute_output --partial 'tests left out'
    # build.sh asks for them: a missing one is an error there, not a skip.
    run cmake -S "$repo" -B "$BATS_TEST_TMPDIR/req" -DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON \
        -DBUFFERLOCK_REQUIRE_TESTS=ON
    assert_failure
    assert_output --partial 'the tests need GoogleTest (libgtest-dev)'
}
