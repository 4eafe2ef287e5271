#!/usr/bin/env bash
# Builds the binary RPM of bufferlock from this source tree with rpmbuild,
# also on Debian (package rpm): the spec's Fedora build macros (%cmake,
# %cmake_build, %cmake_install, from cmake-rpm-macros there) are defined here
# to their plain meaning, and BuildRequires are not checked (--nodeps: no RPM
# database here; the Debian build dependencies are the same libraries).
#
#   packaging/build-rpm.sh OUTDIR
#
# Prints the path of the binary RPM on stdout; the build's log goes to stderr.
# Environment: JOBS (default nproc), TMPDIR.
set -euo pipefail

out=${1:?usage: packaging/build-rpm.sh OUTDIR}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
command -v rpmbuild >/dev/null || {
    echo "build-rpm.sh: rpmbuild not found (install rpm)" >&2
    exit 69
}
mkdir -p -- "$out"
out=$(cd "$out" && pwd)
version=$(sed -nE 's/^Version: +//p' "$root/packaging/bufferlock.spec")
jobs=${JOBS:-$(nproc)}

top=$(mktemp -d "${TMPDIR:-/tmp}/bufferlock-rpm.XXXXXX")
trap 'rm -rf -- "$top"' EXIT
mkdir -p "$top"/{SOURCES,SPECS,BUILD,RPMS,SRPMS}
# The files git knows (tracked, or new and not ignored), as build-deb.sh takes them.
(cd "$root" && git ls-files -z --cached --others --exclude-standard) |
    (cd "$root" && while IFS= read -r -d '' f; do [[ -e $f ]] && printf '%s\0' "$f"; done) |
    (cd "$root" && tar -c --null --no-recursion -T - --transform "s,^,bufferlock-$version/," -z \
        -f "$top/SOURCES/bufferlock-$version.tar.gz")

rpmbuild -bb --nodeps "$root/packaging/bufferlock.spec" \
    --define "_topdir $top" \
    --define "debug_package %{nil}" \
    --define "cmake cmake -S . -B rpm-build -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=%{_prefix}" \
    --define "cmake_build cmake --build rpm-build -j $jobs" \
    --define "cmake_install DESTDIR=%{buildroot} cmake --install rpm-build" >&2

shopt -s nullglob
rpms=("$top"/RPMS/*/bufferlock-"$version"-*.rpm)
((${#rpms[@]} > 0)) || {
    echo "build-rpm.sh: rpmbuild made no RPM" >&2
    exit 1
}
mv -f -- "${rpms[@]}" "$out/"
printf '%s\n' "$out/${rpms[0]##*/}"
