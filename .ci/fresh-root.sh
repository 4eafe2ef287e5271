#!/usr/bin/env bash
# Runs the README's Quick start commands, exactly as written there, as root in
# a fresh minimal Debian 12 root (debootstrap --variant=minbase bookworm), so
# that a package this machine happens to have cannot hide a missing install
# step.
#
#   .ci/fresh-root.sh [BUILD|TEST|ALL]   which Quick start command(s) to run
#                                         (default ALL: both, in order)
#
# The debootstrap result is kept as a tarball in BUFFERLOCK_CI_CACHE (default
# /var/cache/bufferlock-ci) and unpacked anew for every run; the .deb files apt
# downloads are kept there too. Both are downloads only: every run starts from
# a root where nothing but minbase is installed. The root lives in its own
# mount and PID namespace, so its mounts and every process started in it end
# with the run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo=$PWD
which=${1:-ALL}

say() { printf '==> fresh root: %s\n' "$*"; }

[ "$(id -u)" -eq 0 ] || { echo "fresh-root.sh: needs root (debootstrap, chroot, mounts)" >&2; exit 2; }

# The Quick start block of README.md: its first line builds and runs, its
# second runs the tests.
mapfile -t commands < <(awk '/^## Quick start/ { q = 1 } q && /^```sh/ { c = 1; next }
                              c && /^```/ { exit } c && NF { print }' README.md)
[ "${#commands[@]}" -eq 2 ] || { echo "fresh-root.sh: README.md's Quick start has ${#commands[@]} commands, not 2" >&2; exit 2; }
case $which in
BUILD) commands=("${commands[0]}") ;;
TEST) commands=("${commands[1]}") ;;
ALL)
  # Between the two, before the test dependencies are there: a packager's
  # plain cmake configures and builds, leaving the tests out with one message.
  packager='cmake -S . -B build-plain | grep -F "tests left out" && cmake --build build-plain -j "$(nproc)" >/dev/null && build-plain/bufferlock --version | head -n 1 && rm -rf build-plain'
  commands=("${commands[0]}" "$packager" "${commands[1]}")
  ;;
*) echo "usage: $0 [BUILD|TEST|ALL]" >&2; exit 64 ;;
esac

cache=${BUFFERLOCK_CI_CACHE:-/var/cache/bufferlock-ci}
mkdir -p "$cache/apt-archives/partial"
base=$cache/bookworm-minbase.tar

if ! command -v debootstrap >/dev/null; then
  say "installing debootstrap on the host"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
fi

if [ ! -s "$base" ]; then
  say "debootstrap --variant=minbase bookworm (kept in $base)"
  tmp=$(mktemp -d "$cache/debootstrap.XXXXXX")
  chmod 0755 "$tmp" # it becomes /: every user must reach /usr
  trap 'rm -rf "$tmp"' EXIT
  debootstrap --variant=minbase bookworm "$tmp" >"$cache/debootstrap.log" 2>&1 ||
    { tail -n 20 "$cache/debootstrap.log" >&2; exit 1; }
  tar -C "$tmp" --numeric-owner -cf "$base.part" .
  mv "$base.part" "$base"
  rm -rf "$tmp"
  trap - EXIT
fi

work=$(mktemp -d "$cache/run.XXXXXX")
trap 'rm -rf "$work"' EXIT
root=$work/root
mkdir "$root"
tar -C "$root" --numeric-owner -xf "$base"
chmod 0755 "$root" # its /, which other users the tests run as must traverse
# The same package sources as this machine's apt (instead of debootstrap's
# own list), and its name resolution.
sources=()
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list; do
  [ -f "$f" ] && sources+=("$f")
done
if [ "${#sources[@]}" -gt 0 ]; then
  rm -f "$root/etc/apt/sources.list"
  for f in "${sources[@]}"; do cp "$f" "$root$f"; done
fi
cp -L /etc/resolv.conf "$root/etc/resolv.conf"
# The host's CA certificates, for npm (build.sh installs the S3 test server
# from the npm registry): where the host reaches it through an intercepting
# proxy, only the host's store trusts that proxy.
host_ca=
for f in "${NODE_EXTRA_CA_CERTS:-}" /etc/ssl/certs/ca-certificates.crt; do
  [ -n "$f" ] && [ -s "$f" ] || continue
  cp -L "$f" "$root/etc/host-ca-certificates.crt"
  host_ca=/etc/host-ca-certificates.crt
  break
done
# A clone of this checkout's HEAD, as a user would have it.
git clone -q --no-local "$repo" "$root/root/bufferlock"

say "running as root in a fresh Debian 12 minbase root:"
printf '    %s\n' "${commands[@]}"
start=$SECONDS
status=0
unshare --mount --pid --fork --propagation private -- bash -euo pipefail -c '
  root=$1 archives=$2 host_ca=$3
  shift 3
  # The root a mount point of its own, as / is on a real machine: a test that
  # makes a private mount namespace of its own (unshare --propagation private)
  # must be able to change the propagation of /.
  mount --bind "$root" "$root"
  mount --rbind /dev "$root/dev"
  mount -t proc proc "$root/proc"
  mount --rbind /sys "$root/sys"
  mount --bind "$archives" "$root/var/cache/apt/archives"
  chroot "$root" chown _apt:root /var/cache/apt/archives/partial # apt downloads as _apt
  for c in "$@"; do
    printf "==> fresh root: %s\n" "$c"
    chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb CI="${CI:-}" NODE_EXTRA_CA_CERTS="$host_ca" \
      PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      /bin/bash -c "cd /root/bufferlock && $c"
  done
' fresh-root "$root" "$cache/apt-archives" "$host_ca" "${commands[@]}" || status=$?
say "exit status $status after $((SECONDS - start)) s"
exit "$status"
