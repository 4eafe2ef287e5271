#!/usr/bin/env bash
# Builds the Debian package of bufferlock from this source tree.
#
#   packaging/build-deb.sh OUTDIR
#
# dpkg-buildpackage wants debian/ at the root of the source tree, and keeps
# its own build directory there; so this copies the sources (the files git
# knows, tracked or not ignored; without git, everything but .git and the
# build directories) to a scratch directory, puts packaging/debian there as
# debian/, runs "dpkg-buildpackage -us -uc -b", and moves the .deb files to
# OUTDIR (created if missing). The scratch directory is removed afterwards.
# Prints the path of the bufferlock .deb on stdout; the build's log goes to
# stderr. Needs dpkg-dev, debhelper and the Build-Depends of
# packaging/debian/control.
#
# Environment: JOBS (parallel build jobs, default: nproc), TMPDIR.
set -euo pipefail

out=${1:?usage: packaging/build-deb.sh OUTDIR}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mkdir -p -- "$out"
out=$(cd "$out" && pwd)

for tool in dpkg-buildpackage dh; do
    command -v "$tool" >/dev/null || {
        echo "build-deb.sh: $tool not found (install dpkg-dev and debhelper)" >&2
        exit 69
    }
done

scratch=$(mktemp -d "${TMPDIR:-/tmp}/bufferlock-deb.XXXXXX")
trap 'rm -rf -- "$scratch"' EXIT
src=$scratch/bufferlock
mkdir -- "$src"

if git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    # Tracked files and new ones not ignored (build/ and build-*/ are); a
    # tracked file deleted in the work tree is left out.
    (cd "$root" && git ls-files -z --cached --others --exclude-standard) |
        (cd "$root" && while IFS= read -r -d '' f; do
            [[ -e $f || -L $f ]] && printf '%s\0' "$f"
        done) |
        (cd "$root" && tar -c --null --no-recursion -T -) | (cd "$src" && tar -x)
else
    (cd "$root" && tar -c --exclude=./.git --exclude='./build' --exclude='./build-*' \
        --exclude='./obj-*' .) | (cd "$src" && tar -x)
fi
rm -rf -- "$src/debian"
cp -R -- "$root/packaging/debian" "$src/debian"

jobs=${JOBS:-$(nproc)}
(cd "$src" && DEB_BUILD_OPTIONS="parallel=$jobs ${DEB_BUILD_OPTIONS:-}" \
    dpkg-buildpackage -us -uc -b) >&2

shopt -s nullglob
debs=("$scratch"/*.deb)
((${#debs[@]} > 0)) || {
    echo "build-deb.sh: dpkg-buildpackage made no .deb" >&2
    exit 1
}
mv -f -- "${debs[@]}" "$out/"
main=("$out"/bufferlock_*.deb)
printf '%s\n' "${main[@]}"
