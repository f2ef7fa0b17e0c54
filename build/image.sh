#!/bin/bash
# The flashable SD-card image for Raspberry Pi 4 and 3B+ (arm64):
# dist/masterorder-<version>-rpi-arm64.img.xz, built only from Debian
# packages (bookworm, main + non-free-firmware for raspi-firmware) by
# mmdebstrap through qemu-user, plus partitioning done on the image file
# (no loop devices, no mounts).
#
#   build/image.sh                         # VERSION from git, as build.sh
#   VERSION=1.2.0 build/image.sh
#   DEB=dist/masterorder_..._arm64.deb build/image.sh   # use a built package
#
# The card: 1 FAT boot partition (RASPIFIRM, firmware, kernel, initrd,
# config.txt, cmdline.txt; mounted read-only), 2 root ext4 (RASPIROOT,
# read-only), 3 data ext4 (MODATA, /data: the box's config and data; grows
# to the card on first boot). See docs/packaging.md.
# Needs root (mmdebstrap --mode=root, binfmt_misc); ~20 min of CPU.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
export PATH="/usr/local/go/bin:$PATH"
SUITE=bookworm
MIRROR=${MIRROR:-http://deb.debian.org/debian}
SECURITY_MIRROR=${SECURITY_MIRROR:-http://deb.debian.org/debian-security}
OUT=${OUT:-dist}
case "$OUT" in /*) ;; *) OUT="$root/$OUT" ;; esac
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
  SOURCE_DATE_EPOCH=$(git log -1 --format=%ct 2>/dev/null || date +%s)
fi
export SOURCE_DATE_EPOCH
VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
export VERSION

[ "$(id -u)" = 0 ] || { echo "image.sh: run as root (mmdebstrap --mode=root, binfmt_misc)" >&2; exit 1; }
need=()
for t in mmdebstrap:mmdebstrap mke2fs:e2fsprogs mkfs.vfat:dosfstools mcopy:mtools sfdisk:fdisk xz:xz-utils update-binfmts:binfmt-support; do
  command -v "${t%%:*}" >/dev/null || need+=("${t#*:}")
done
[ -e /usr/libexec/qemu-binfmt/aarch64-binfmt-P ] || [ -e /usr/bin/qemu-aarch64-static ] || need+=(qemu-user-static)
if [ ${#need[@]} -gt 0 ]; then
  echo "== apt-get install ${need[*]}"
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
if [ "$(dpkg --print-architecture)" != arm64 ]; then
  mountpoint -q /proc/sys/fs/binfmt_misc || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
  update-binfmts --enable qemu-aarch64
fi

# The package that goes on the card.
if [ -z "${DEB:-}" ]; then
  echo "== build/deb.sh (arm64)"
  DEB_ARCHS=arm64 OUT="$OUT" build/deb.sh >/dev/null
  DEB=$(ls -t "$OUT"/masterorder_*_arm64.deb | head -n1)
fi
case "$DEB" in /*) ;; *) DEB="$root/$DEB" ;; esac
echo "== package: $DEB"

CACHE_DIR=${CACHE_DIR:-/var/cache/masterorder-build}
mkdir -p "$CACHE_DIR"
work=$(mktemp -d /tmp/masterorder-image.XXXXXX)
trap 'umount "$rootdir/proc" 2>/dev/null || true; rm -rf --one-file-system "$work"' EXIT
rootdir="$work/root"

packages=(
  systemd systemd-sysv udev dbus kmod
  linux-image-arm64 initramfs-tools raspi-firmware
  avahi-daemon openssh-server
  e2fsprogs dosfstools fdisk util-linux iproute2 ca-certificates
)
include=$(IFS=,; echo "${packages[*]}")
# The Debian part of the root filesystem (packages and masterorder.deb) is
# cached by what goes into it; the OS settings (build/image/rootfs,
# customize.sh) are applied on top at every build, so changing them costs
# seconds, not another 20 minutes of qemu-user.
key=$( { echo "$SUITE $include $MIRROR $SECURITY_MIRROR"; sha256sum "$DEB" | cut -d' ' -f1; } | sha256sum | cut -c1-16)
rootfs_tar="$CACHE_DIR/image-rootfs-$SUITE-arm64-$key.tar"
start=$(date +%s)
if [ ! -s "$rootfs_tar" ]; then
  echo "== mmdebstrap $SUITE arm64 ($include)"
  nice -n 19 mmdebstrap --mode=root --variant=minbase --architectures=arm64 \
    --components="main non-free-firmware" --include="$include" \
    --customize-hook='cp "'"$DEB"'" "$1/tmp/masterorder.deb" && chroot "$1" dpkg -i /tmp/masterorder.deb && rm "$1/tmp/masterorder.deb"' \
    "$SUITE" "$rootfs_tar.tmp.tar" \
    "deb $MIRROR $SUITE main non-free-firmware" \
    "deb $MIRROR $SUITE-updates main non-free-firmware" \
    "deb $SECURITY_MIRROR $SUITE-security main non-free-firmware"
  mv "$rootfs_tar.tmp.tar" "$rootfs_tar"
  echo "   packages in $(( $(date +%s) - start )) s"
else
  echo "== packages from cache: $rootfs_tar"
fi
mkdir -p "$rootdir"
tar -C "$rootdir" --numeric-owner -xpf "$rootfs_tar"
echo "== OS settings: build/image/rootfs, customize.sh"
tar -C build/image/rootfs --owner=root --group=root -cf - . | tar -C "$rootdir" -xf -
cp build/image/customize.sh "$rootdir/tmp/customize.sh"
mount -t proc proc "$rootdir/proc"
chroot "$rootdir" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C.UTF-8 sh /tmp/customize.sh ||
  { umount "$rootdir/proc"; echo "image.sh: customize.sh failed" >&2; exit 1; }
umount "$rootdir/proc"
rm -f "$rootdir/tmp/customize.sh"

# Split the tree into the three partitions.
bootdir="$work/boot"
datadir="$work/data"
mkdir -p "$bootdir" "$datadir"
cp -a "$rootdir/boot/firmware/." "$bootdir/"
find "$rootdir/boot/firmware" -mindepth 1 -delete
uid=$(chroot "$rootdir" id -u masterorder)
gid=$(chroot "$rootdir" id -g masterorder)
install -d -m 0750 -o "$uid" -g "$gid" "$datadir/masterorder" "$datadir/etc-masterorder" "$datadir/etc-masterorder/tls"
cp -a "$rootdir/var/lib/systemd" "$datadir/systemd"
install -d -m 0700 "$datadir/ssh"
grep -q 'root=LABEL=RASPIROOT' "$bootdir/cmdline.txt" || { echo "image.sh: cmdline.txt lacks root=LABEL=RASPIROOT: $(cat "$bootdir/cmdline.txt")" >&2; exit 1; }
echo "   cmdline.txt: $(cat "$bootdir/cmdline.txt")"
echo "   boot partition: $(ls "$bootdir" | tr '\n' ' ')"

mib=$((1024 * 1024))
boot_mib=256
root_mib=$(( $(du -s --block-size=1M "$rootdir" | cut -f1) * 5 / 4 + 160 ))
data_mib=128
img="$work/masterorder.img"
total_mib=$((1 + boot_mib + root_mib + data_mib))
truncate -s $((total_mib * mib)) "$img"
printf 'label: dos\nlabel-id: 0x4d4f5244\nunit: sectors\n%s\n%s\n%s\n' \
  "start=2048, size=$((boot_mib * 2048)), type=c, bootable" \
  "start=$(((1 + boot_mib) * 2048)), size=$((root_mib * 2048)), type=83" \
  "start=$(((1 + boot_mib + root_mib) * 2048)), size=$((data_mib * 2048)), type=83" |
  sfdisk --quiet "$img"

echo "== filesystems (boot $boot_mib MiB, root $root_mib MiB, data $data_mib MiB; data grows to the card on first boot)"
export E2FSPROGS_FAKE_TIME=$SOURCE_DATE_EPOCH
mkfs.vfat -F 32 -n RASPIFIRM -i 4d4f4f52 -C "$work/boot.fat" $((boot_mib * 1024)) >/dev/null
mcopy -s -p -m -i "$work/boot.fat" "$bootdir"/* ::/
mke2fs -q -t ext4 -L RASPIROOT -U clear -E root_owner=0:0 -d "$rootdir" "$work/root.ext4" "${root_mib}M"
mke2fs -q -t ext4 -L MODATA -E root_owner=0:0 -d "$datadir" "$work/data.ext4" "${data_mib}M"
dd if="$work/boot.fat" of="$img" bs=1M seek=1 conv=notrunc,sparse status=none
dd if="$work/root.ext4" of="$img" bs=1M seek=$((1 + boot_mib)) conv=notrunc,sparse status=none
dd if="$work/data.ext4" of="$img" bs=1M seek=$((1 + boot_mib + root_mib)) conv=notrunc,sparse status=none

mkdir -p "$OUT"
name="masterorder-$VERSION-rpi-arm64.img"
echo "== xz $name"
nice -n 19 xz -T2 -6 -c "$img" >"$OUT/$name.xz.tmp"
mv "$OUT/$name.xz.tmp" "$OUT/$name.xz"
(cd "$OUT" && sha256sum "$name.xz" >"$name.xz.sha256")
echo "$OUT/$name.xz  $(wc -c <"$OUT/$name.xz") bytes compressed, $(wc -c <"$img") bytes uncompressed"
echo "image built in $(( $(date +%s) - start )) s"
