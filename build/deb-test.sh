#!/bin/bash
# Install, upgrade, remove and purge the masterorder package for real, in a
# Debian chroot built by mmdebstrap (maintainer scripts run): bookworm by
# default, SUITE=trixie for Debian 13 (what the SD-card image runs).
# Needs root. The chroot tarball is cached, so a rerun takes seconds.
#
#   build/deb-test.sh                  # amd64 (native)
#   ARCH=arm64 build/deb-test.sh       # arm64 through qemu-user-static + binfmt_misc
#   SUITE=trixie build/deb-test.sh     # in Debian 13
#   OLD_DEB=a.deb NEW_DEB=b.deb build/deb-test.sh   # test given packages (else built here: 0.1.0 then 0.1.1)
#
# It checks: the user, modes and enabled unit after install; `masterorder
# version` runs inside; an upgrade keeps the box's configuration, TLS
# material, data and an admin's drop-in byte for byte (and their modes and
# owners); remove keeps them; purge deletes them.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
export PATH="/usr/local/go/bin:$PATH"
ARCH=${ARCH:-amd64}
SUITE=${SUITE:-bookworm}
CACHE_DIR=${CACHE_DIR:-/var/cache/masterorder-build}

[ "$(id -u)" = 0 ] || { echo "deb-test.sh: run as root (it builds and enters a chroot)" >&2; exit 1; }

need=()
command -v mmdebstrap >/dev/null || need+=(mmdebstrap)
command -v zstd >/dev/null || need+=(zstd)
if [ "$ARCH" != "$(dpkg --print-architecture)" ]; then
  [ -e /usr/libexec/qemu-binfmt/aarch64-binfmt-P ] || [ -e /usr/bin/qemu-aarch64-static ] || need+=(qemu-user-static)
  command -v update-binfmts >/dev/null || need+=(binfmt-support)
fi
if [ ${#need[@]} -gt 0 ]; then
  echo "== apt-get install ${need[*]}"
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
if [ "$ARCH" != "$(dpkg --print-architecture)" ]; then
  # qemu-user-static's binfmt handlers, as root on this machine.
  mountpoint -q /proc/sys/fs/binfmt_misc || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
  case "$ARCH" in
    arm64) update-binfmts --enable qemu-aarch64 ;;
    armhf) update-binfmts --enable qemu-arm ;;
  esac
fi

work=$(mktemp -d /tmp/masterorder-deb-test.XXXXXX)
chroot_dir="$work/root"
cleanup() {
  for m in proc; do
    mountpoint -q "$chroot_dir/$m" 2>/dev/null && umount -l "$chroot_dir/$m"
  done
  rm -rf "$work"
}
trap cleanup EXIT

# The packages under test.
if [ -z "${OLD_DEB:-}" ] || [ -z "${NEW_DEB:-}" ]; then
  echo "== building the packages 0.1.0 and 0.1.1 ($ARCH)"
  VERSION=0.1.0 DEB_ARCHS=$ARCH OUT="$work/old" build/deb.sh >/dev/null
  VERSION=0.1.1 DEB_ARCHS=$ARCH OUT="$work/new" build/deb.sh >/dev/null
  OLD_DEB=$(ls "$work"/old/masterorder_*.deb)
  NEW_DEB=$(ls "$work"/new/masterorder_*.deb)
fi
old_version=$(dpkg-deb -f "$OLD_DEB" Version)
new_version=$(dpkg-deb -f "$NEW_DEB" Version)
# What `masterorder version` prints: the release name (OLD_VERSION and
# NEW_VERSION when the packages are given), else the Debian upstream version.
old_upstream=${OLD_VERSION:-${old_version%-*}}
new_upstream=${NEW_VERSION:-${new_version%-*}}

# The chroot: $SUITE with systemd (the package's dependency), cached by
# what it contains.
mkdir -p "$CACHE_DIR"
include=systemd
tarball="$CACHE_DIR/deb-test-$SUITE-$ARCH-$(echo "$include" | sha256sum | cut -c1-12).tar.zst"
if [ ! -s "$tarball" ]; then
  echo "== mmdebstrap $SUITE $ARCH (cached in $tarball)"
  nice -n 19 mmdebstrap --quiet --variant=apt --architectures="$ARCH" --include="$include" \
    "$SUITE" "$tarball.tmp.tar.zst" http://deb.debian.org/debian
  mv "$tarball.tmp.tar.zst" "$tarball"
fi
mkdir -p "$chroot_dir"
tar --zstd -xf "$tarball" -C "$chroot_dir"
mount -t proc proc "$chroot_dir/proc"
cp "$OLD_DEB" "$chroot_dir/tmp/old.deb"
cp "$NEW_DEB" "$chroot_dir/tmp/new.deb"

in_chroot() { chroot "$chroot_dir" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C.UTF-8 "$@"; }
fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "ok: $*"; passed=$((passed + 1)); }
passed=0

# What a box keeps: config, TLS key, data, an admin's unit drop-in. The
# manifest holds each file's hash, mode and owner.
manifest() {
  in_chroot sh -c 'cd / && find etc/masterorder var/lib/masterorder etc/systemd/system/masterorder.service.d -type f -print0 2>/dev/null | sort -z | xargs -0 -r stat -c "%n %a %U:%G" && find etc/masterorder var/lib/masterorder etc/systemd/system/masterorder.service.d -type f -print0 | sort -z | xargs -0 -r sha256sum'
}

echo "== install $old_version"
in_chroot dpkg -i /tmp/old.deb
in_chroot id masterorder >/dev/null || fail "no masterorder user after install"
pass "user $(in_chroot id masterorder)"
[ "$(in_chroot getent passwd masterorder | cut -d: -f7)" = /usr/sbin/nologin ] || fail "masterorder has a login shell"
for d in /etc/masterorder /var/lib/masterorder; do
  got=$(in_chroot stat -c '%a %U:%G' "$d")
  [ "$got" = "750 masterorder:masterorder" ] || fail "$d is $got, want 750 masterorder:masterorder"
  pass "$d $got"
done
out=$(in_chroot masterorder version)
case "$out" in "masterorder ${old_upstream} ("*) ;; *) fail "masterorder version: $out, want masterorder ${old_upstream}" ;; esac
pass "inside the chroot: $out"
[ -L "$chroot_dir/etc/systemd/system/multi-user.target.wants/masterorder.service" ] || fail "unit not enabled"
pass "masterorder.service enabled ($(in_chroot systemctl is-enabled masterorder.service))"
in_chroot systemd-analyze verify --man=no /lib/systemd/system/masterorder.service || fail "systemd-analyze verify"
pass "systemd-analyze verify masterorder.service"

echo "== a box's configuration and data"
in_chroot sh -ec '
  umask 077
  printf "# written by setup when the box was claimed\nnode_id = \"a\"\ndata_dir = \"/var/lib/masterorder\"\n" >/etc/masterorder/masterorder.toml
  head -c 4096 /dev/urandom >/etc/masterorder/tls/a-key.pem
  mkdir -p /var/lib/masterorder/raft /var/lib/masterorder/setup
  head -c 1048576 /dev/urandom >/var/lib/masterorder/raft/raft.db
  head -c 65536 /dev/urandom >/var/lib/masterorder/store.sqlite
  printf "box-id\n" >/var/lib/masterorder/setup/identity
  chown -R masterorder:masterorder /etc/masterorder /var/lib/masterorder
  mkdir -p /etc/systemd/system/masterorder.service.d
  printf "[Service]\nEnvironment=GOMAXPROCS=2\n" >/etc/systemd/system/masterorder.service.d/local.conf
  chmod 0644 /etc/systemd/system/masterorder.service.d/local.conf'
before=$(manifest)
echo "$before" | grep -c . | xargs -I{} echo "   {} manifest lines"

echo "== upgrade to $new_version"
in_chroot dpkg -i /tmp/new.deb
[ "$(in_chroot dpkg-query -W -f '${Version}' masterorder)" = "$new_version" ] || fail "not upgraded"
out=$(in_chroot masterorder version)
case "$out" in "masterorder ${new_upstream} ("*) ;; *) fail "masterorder version after the upgrade: $out, want masterorder ${new_upstream}" ;; esac
pass "upgraded: $out"
after=$(manifest)
if [ "$before" != "$after" ]; then
  diff <(echo "$before") <(echo "$after") || true
  fail "the upgrade changed a box's configuration or data"
fi
pass "configuration, TLS, data and drop-in byte for byte, same modes and owners after the upgrade"

echo "== remove"
in_chroot dpkg -r masterorder
[ ! -e "$chroot_dir/usr/bin/masterorder" ] || fail "binary still there after remove"
[ ! -e "$chroot_dir/lib/systemd/system/masterorder.service" ] || fail "unit still there after remove"
after_remove=$(manifest)
[ "$before" = "$after_remove" ] || fail "remove changed or deleted a box's configuration or data"
pass "removed; configuration and data kept byte for byte"

echo "== purge"
in_chroot dpkg -P masterorder
[ ! -e "$chroot_dir/etc/masterorder" ] || fail "/etc/masterorder still there after purge"
[ ! -e "$chroot_dir/var/lib/masterorder" ] || fail "/var/lib/masterorder still there after purge"
[ ! -e "$chroot_dir/etc/systemd/system/multi-user.target.wants/masterorder.service" ] || fail "enable symlink left after purge"
in_chroot dpkg-query -W masterorder >/dev/null 2>&1 && [ "$(in_chroot dpkg-query -W -f '${Status}' masterorder)" != "unknown ok not-installed" ] &&
  fail "package still known to dpkg after purge: $(in_chroot dpkg-query -W -f '${Status}' masterorder)"
pass "purged: /etc/masterorder and /var/lib/masterorder gone"

echo "== reinstall after purge"
in_chroot dpkg -i /tmp/new.deb >/dev/null
[ -d "$chroot_dir/var/lib/masterorder" ] && [ ! -e "$chroot_dir/etc/masterorder/masterorder.toml" ] || fail "reinstall after purge"
pass "a fresh install after purge starts empty (setup mode)"

echo "deb-test ($ARCH): $passed passed, 0 failed"
