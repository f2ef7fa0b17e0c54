#!/bin/bash
# The flashable SD-card image for Raspberry Pi 5, 4 B, 400, 3B+ and 3B
# (arm64): dist/masterorder-<version>-rpi-arm64.img.xz, built only from
# Debian packages (trixie, main + non-free-firmware for raspi-firmware; the
# kernel from trixie-backports, the first Debian kernel with the Pi 5's RP1
# drivers and device trees) by mmdebstrap through qemu-user, plus
# partitioning done on the image file (no loop devices, no mounts).
# build/image-check.sh then reads the finished image, model by model.
#
#   build/image.sh                         # VERSION from git, as build.sh
#   VERSION=1.2.0 build/image.sh
#   DEB=dist/masterorder_..._arm64.deb build/image.sh   # use a built package
#   NICE=0 build/image.sh                  # mmdebstrap and xz at normal priority (default 19)
#
# The card (MBR, 4 primary partitions; fixed now: the data partition
# takes the rest of the card on first boot, so this layout is for good):
#   1 FAT boot (RASPIFIRM: Pi firmware, device trees, config.txt, U-Boot,
#     boot.scr, mo-bootstate.env; mounted read-only),
#   2 system slot A (RAUC rootfs.0) and 3 system slot B (rootfs.1), each
#     SLOT_MIB (2 GiB) holding a read-only ext4 root with its own kernel and
#     initramfs; the image fills A, B is empty until the first update,
#   4 data ext4 (MODATA, /data: the box's config and data, the persistent
#     journal, RAUC's status; grows to the card on first boot).
# Also writes the system image both slots and update bundles are made of,
# dist/masterorder-<v>-rpi-arm64.rootfs.ext4 (build/bundle.sh signs it).
# See docs/packaging.md and docs/sd-card.md.
# Needs root (mmdebstrap --mode=root, binfmt_misc); ~20 min of CPU.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
export PATH="/usr/local/go/bin:$PATH"
SUITE=trixie
# The kernel comes from backports: trixie's own 6.12 has no RP1 drivers
# (no Ethernet, no GPIO on a Pi 5) and no device tree for the Pi 5's D0 stepping.
KERNEL_SUITE=$SUITE-backports
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
for t in openssl:openssl mkimage:u-boot-tools mmdebstrap:mmdebstrap arch-test:arch-test mke2fs:e2fsprogs mkfs.vfat:dosfstools mcopy:mtools sfdisk:fdisk xz:xz-utils update-binfmts:binfmt-support fdtget:device-tree-compiler zstd:zstd cpio:cpio; do
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
  "linux-image-arm64/$KERNEL_SUITE" initramfs-tools raspi-firmware
  avahi-daemon openssh-server systemd-timesyncd
  rauc rauc-service u-boot-rpi
  e2fsprogs dosfstools fdisk util-linux util-linux-extra iproute2 ca-certificates
)
include=$(IFS=,; echo "${packages[*]}")
# The Debian part of the root filesystem is cached by what goes into it;
# masterorder.deb and the OS settings (build/image/rootfs, customize.sh)
# are applied on top at every build, so changing them costs seconds, not
# another 20 minutes of qemu-user.
# build/image/initramfs/ (which modules the initramfs carries) goes in
# before the kernel is installed, so it is part of this cached layer.
key=$( { echo "$SUITE $KERNEL_SUITE $include $MIRROR $SECURITY_MIRROR"; tar -C build/image/initramfs --sort=name --mtime=@0 --owner=0 --group=0 -cf - . | sha256sum; } | sha256sum | cut -c1-16)
rootfs_tar="$CACHE_DIR/image-rootfs-$SUITE-arm64-$key.tar"
start=$(date +%s)
if [ ! -s "$rootfs_tar" ]; then
  echo "== mmdebstrap $SUITE arm64 ($include)"
  nice -n "${NICE:-19}" mmdebstrap --mode=root --variant=minbase --architectures=arm64 \
    --components="main non-free-firmware" --include="$include" \
    --essential-hook='mkdir -p "$1/etc/initramfs-tools" && tar -C "'"$root"'/build/image/initramfs" --owner=root --group=root -cf - . | tar -C "$1/etc/initramfs-tools" -xf -' \
    "$SUITE" "$rootfs_tar.tmp.tar" \
    "deb $MIRROR $SUITE main non-free-firmware" \
    "deb $MIRROR $SUITE-updates main non-free-firmware" \
    "deb $SECURITY_MIRROR $SUITE-security main non-free-firmware" \
    "deb $MIRROR $KERNEL_SUITE main non-free-firmware"
  mv "$rootfs_tar.tmp.tar" "$rootfs_tar"
  echo "   packages in $(( $(date +%s) - start )) s"
else
  echo "== packages from cache: $rootfs_tar"
fi
mkdir -p "$rootdir"
tar -C "$rootdir" --numeric-owner -xpf "$rootfs_tar"
mount -t proc proc "$rootdir/proc"
echo "== dpkg -i $(basename "$DEB")"
cp "$DEB" "$rootdir/tmp/masterorder.deb"
chroot "$rootdir" dpkg -i /tmp/masterorder.deb >/dev/null ||
  { umount "$rootdir/proc"; echo "image.sh: dpkg -i masterorder.deb failed" >&2; exit 1; }
rm "$rootdir/tmp/masterorder.deb"
echo "== OS settings: build/image/rootfs, customize.sh"
tar -C build/image/rootfs --owner=root --group=root -cf - . | tar -C "$rootdir" -xf -
cp build/image/customize.sh "$rootdir/tmp/customize.sh"
chroot "$rootdir" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C.UTF-8 sh /tmp/customize.sh ||
  { umount "$rootdir/proc"; echo "image.sh: customize.sh failed" >&2; exit 1; }
umount "$rootdir/proc"
rm -f "$rootdir/tmp/customize.sh"
# systemd starts the clock at least at this file's time (a Pi has no
# real-time clock): the box never starts before its own build.
touch -d "@$SOURCE_DATE_EPOCH" "$rootdir/usr/lib/clock-epoch"
# The keyring RAUC checks bundles against: the signing key's CA
# certificate only (KEYRING=..., default the development key's,
# build/signing-key.sh); the key itself never goes on a box.
KEYRING=${KEYRING:-$(build/signing-key.sh keyring)}
install -D -m 0644 "$KEYRING" "$rootdir/etc/rauc/keyring.pem"
echo "   keyring: $(openssl x509 -in "$rootdir/etc/rauc/keyring.pem" -noout -subject | sed 's/^subject=//')"

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
# The persistent journal (bind-mounted on /var/log/journal, capped by
# journald.conf.d/10-masterorder.conf): journald's own group and mode.
install -d -m 2755 -o 0 -g "$(chroot "$rootdir" getent group systemd-journal | cut -d: -f3)" "$datadir/journal"
# RAUC's status (system.conf: data-directory=/data/rauc): slot A holds this
# version, so rauc status and the console can say what the box runs.
install -d -m 0755 "$datadir/rauc"
printf '[slot.rootfs.0]\nbundle.compatible=masterorder-rpi-arm64\nbundle.version=%s\nstatus=ok\n' "$VERSION" >"$datadir/rauc/central.raucs"
# The firmware starts U-Boot (config.txt: kernel=u-boot.bin, set by
# customize.sh); U-Boot runs boot.scr, which picks the slot and starts the
# kernel and initramfs from it with its own command line (cmdline.txt is
# not used).
mkimage -A arm64 -O linux -T script -C none -n "MasterOrder A/B boot" -d build/image/boot/boot.cmd "$bootdir/boot.scr" >/dev/null
# Slot A holds this build, slot B nothing yet: U-Boot never tries B.
printf 'BOOT_ORDER=A B\nBOOT_A_LEFT=3\nBOOT_B_LEFT=0\nBOOT_TRIAL=none\n' >"$bootdir/mo-bootstate.env"
grep -qx 'kernel=u-boot.bin' "$bootdir/config.txt" && [ -f "$bootdir/u-boot.bin" ] || { echo "image.sh: config.txt does not start U-Boot: $(cat "$bootdir/config.txt")" >&2; exit 1; }
! ls "$bootdir" | grep -qE '^(vmlinuz|initrd)' || { echo "image.sh: a kernel on the boot partition: the kernel is in each slot" >&2; exit 1; }
[ -f "$rootdir/boot/vmlinuz" ] && [ -f "$rootdir/boot/initrd.img" ] || { echo "image.sh: no /boot/vmlinuz and /boot/initrd.img in the system" >&2; exit 1; }
echo "   boot partition: $(ls "$bootdir" | tr '\n' ' ')"

mib=$((1024 * 1024))
boot_mib=256
# Each system slot: fixed for good (see above); the system image in it may
# grow up to this. Today's is under a third of it.
slot_mib=2048
root_mib=$(( $(du -s --block-size=1M "$rootdir" | cut -f1) * 5 / 4 + 160 ))
[ "$root_mib" -le "$slot_mib" ] || { echo "image.sh: the system ($root_mib MiB) does not fit a $slot_mib MiB slot" >&2; exit 1; }
data_mib=256
img="$work/masterorder.img"
total_mib=$((1 + boot_mib + 2 * slot_mib + data_mib))
truncate -s $((total_mib * mib)) "$img"
# The disk identifier names the slots for the kernel: root=PARTUUID=4d4f5244-02 (A), -03 (B).
printf 'label: dos\nlabel-id: 0x4d4f5244\nunit: sectors\n%s\n%s\n%s\n%s\n' \
  "start=2048, size=$((boot_mib * 2048)), type=c, bootable" \
  "start=$(((1 + boot_mib) * 2048)), size=$((slot_mib * 2048)), type=83" \
  "start=$(((1 + boot_mib + slot_mib) * 2048)), size=$((slot_mib * 2048)), type=83" \
  "start=$(((1 + boot_mib + 2 * slot_mib) * 2048)), size=$((data_mib * 2048)), type=83" |
  sfdisk --quiet "$img"

echo "== filesystems (boot $boot_mib MiB, slots A and B $slot_mib MiB each (system $root_mib MiB), data $data_mib MiB; data grows to the card on first boot)"
export E2FSPROGS_FAKE_TIME=$SOURCE_DATE_EPOCH
mkfs.vfat -F 32 -n RASPIFIRM -i 4d4f4f52 -C "$work/boot.fat" $((boot_mib * 1024)) >/dev/null
mcopy -s -p -m -i "$work/boot.fat" "$bootdir"/* ::/
mke2fs -q -t ext4 -L RASPIROOT -U clear -E root_owner=0:0 -d "$rootdir" "$work/root.ext4" "${root_mib}M"
# The data partition is made for the size it grows to, not the 256 MiB it
# has in the image: mke2fs would pick the "small" type (1 KiB blocks, an
# inode per 4 KiB, a 4 MiB journal) and resize2fs keeps all three. So the
# "default" type's 4 KiB blocks and inode per 16 KiB, a 64 MiB journal
# (what mke2fs gives a 4-16 GiB file system) and room in the group
# descriptor table to grow online to 1 TiB.
mke2fs -q -t ext4 -T default -b 4096 -I 256 -i 16384 -J size=64 -E root_owner=0:0,resize=$((1024 * 1024 * 1024 * 1024 / 4096)) \
  -L MODATA -d "$datadir" "$work/data.ext4" "${data_mib}M"
dd if="$work/boot.fat" of="$img" bs=1M seek=1 conv=notrunc,sparse status=none
dd if="$work/root.ext4" of="$img" bs=1M seek=$((1 + boot_mib)) conv=notrunc,sparse status=none
dd if="$work/data.ext4" of="$img" bs=1M seek=$((1 + boot_mib + 2 * slot_mib)) conv=notrunc,sparse status=none

echo "== build/image-check.sh (every supported model, read from the image)"
mkdir -p "$OUT"
build/image-check.sh "$img" || { mv "$img" "$OUT/masterorder-$VERSION-rpi-arm64.img.check-failed"; echo "image.sh: image-check failed; the image is kept as $OUT/masterorder-$VERSION-rpi-arm64.img.check-failed" >&2; exit 1; }

mkdir -p "$OUT"
# The system image: what build/bundle.sh signs into an update bundle, the
# same bytes as slot A.
rootfs_name="masterorder-$VERSION-rpi-arm64.rootfs.ext4"
cp --sparse=always "$work/root.ext4" "$OUT/$rootfs_name.tmp"
mv "$OUT/$rootfs_name.tmp" "$OUT/$rootfs_name"
name="masterorder-$VERSION-rpi-arm64.img"
echo "== xz $name"
# XZ_LEVEL=0 for a quick test build (a release uses the default, 6).
nice -n "${NICE:-19}" xz -T2 "-${XZ_LEVEL:-6}" -c "$img" >"$OUT/$name.xz.tmp"
mv "$OUT/$name.xz.tmp" "$OUT/$name.xz"
(cd "$OUT" && sha256sum "$name.xz" >"$name.xz.sha256")
echo "$OUT/$name.xz  $(wc -c <"$OUT/$name.xz") bytes compressed, $(wc -c <"$img") bytes uncompressed"
echo "image built in $(( $(date +%s) - start )) s"
