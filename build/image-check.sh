#!/bin/bash
# Checks a built SD-card image for every supported Raspberry Pi model, by
# reading the image itself (the root partition mounted read-only through a
# loop device, the boot partition read with mtools), not the build's inputs:
#   - the device tree the board's firmware loads is on the boot partition;
#   - config.txt has the model's section (and its device_tree= line) and
#     starts U-Boot (kernel=u-boot.bin: Debian's rpi_arm64, with the
#     commands boot.scr uses); boot.scr picks slot A or B by PARTUUID, with
#     no cma=; the kernel and initramfs are in the system slot, not on the
#     boot partition;
#   - the card's layout: boot, slot A, slot B (the same size), data last;
#     RAUC's system.conf (compatible masterorder-rpi-arm64, slots rootfs.0
#     and rootfs.1, the custom backend), the keyring is a CA certificate and
#     no private key is in the image;
#   - in that device tree, the SD-card controller and the Ethernet (and on
#     the Pi 5 the RP1 chip it hangs off) are enabled, and for each the
#     image's kernel has a driver that matches it: the module's alias in
#     /lib/modules/<version>/modules.alias (or a built-in's in
#     modules.builtin.modinfo) is looked up from the node's compatible, and
#     modinfo reads the module file from the image; the SD driver is in the
#     initramfs too (the root file system is on the card);
#   - the hardware watchdog's driver (bcm2835_wdt) is in the image and the
#     initramfs, and systemd is told to use it.
#
#   build/image-check.sh dist/masterorder-<v>-rpi-arm64.img[.xz]
# Needs root (loop devices). Prints one line per check and
# "image-check: N passed, N failed".
set -euo pipefail
cd "$(dirname "$0")/.."

[ "$(id -u)" = 0 ] || { echo "image-check.sh: run as root (loop devices)" >&2; exit 1; }
need=()
for t in openssl:openssl strings:binutils mcopy:mtools fdtget:device-tree-compiler dtc:device-tree-compiler modinfo:kmod sfdisk:fdisk xz:xz-utils zstd:zstd cpio:cpio jq:jq; do
  command -v "${t%%:*}" >/dev/null || need+=("${t#*:}")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "== apt-get install ${need[*]}"
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends $(printf '%s\n' "${need[@]}" | sort -u) >/dev/null
fi

image=${1:-$(ls -t dist/masterorder-*-rpi-arm64.img.xz 2>/dev/null | head -n1)}
[ -n "$image" ] && [ -f "$image" ] || { echo "image-check.sh: no image given" >&2; exit 1; }
work=$(mktemp -d /tmp/masterorder-image-check.XXXXXX)
boot="$work/boot"
root="$work/root"
mkdir -p "$boot" "$root"
cleanup() {
  umount "$root" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
case "$image" in
  *.xz) xz -dc "$image" >"$work/disk.img"; disk="$work/disk.img" ;;
  *) disk=$image ;;
esac

passed=0
failed=0
ok() { echo "ok:   $*"; passed=$((passed + 1)); }
bad() { echo "FAIL: $*"; failed=$((failed + 1)); }

# Partitions 1 (boot, FAT: copied out) and 2 (slot A, ext4: mounted
# read-only without replaying its journal, noload), so the image is not
# written.
parts=$(sfdisk -J "$disk")
part_start() { jq -r ".partitiontable.partitions[$1].start" <<<"$parts"; }
part_size() { jq -r ".partitiontable.partitions[$1].size" <<<"$parts"; }
# The FAT partition is read with mtools (no vfat module needed on this machine).
mcopy -s -n -m -i "$disk@@$(($(part_start 0) * 512))" '::/*' "$boot/"
mount -o ro,noload,loop,offset=$(($(part_start 1) * 512)),sizelimit=$(($(part_size 1) * 512)) -t ext4 "$disk" "$root"

echo "== the card and the A/B system"
ptab="$(jq -r '.partitiontable | "\(.label) \(.id) " + ([.partitions[] | "\(.type):\(.size)"] | join(" "))' <<<"$parts")"
n=$(jq '.partitiontable.partitions | length' <<<"$parts")
if [ "$n" = 4 ] && [[ $ptab == "dos 0x4d4f5244 "* ]] && [ "$(part_size 1)" = "$(part_size 2)" ] && [ "$(part_size 1)" -ge $((2048 * 2048)) ] &&
  [ "$(part_start 3)" -gt "$(part_start 2)" ]; then
  ok "partitions: boot, slot A, slot B ($(( $(part_size 1) / 2048 )) MiB each), data last (disk id 0x4d4f5244: root=PARTUUID=4d4f5244-02 / -03): $ptab"
else
  bad "partitions are not boot, slot A, slot B (same size, >= 2 GiB), data: $ptab"
fi
kernel=$(sed -n 's/^kernel=//p' "$boot/config.txt" | head -n1)
[ "$kernel" = u-boot.bin ] && [ -f "$boot/u-boot.bin" ] && ok "config.txt: kernel=u-boot.bin, on the boot partition" || bad "config.txt: kernel=$kernel (not U-Boot, or missing)"
! grep -q '^initramfs ' "$boot/config.txt" && ! ls "$boot" | grep -qE '^(vmlinuz|initrd)' && ok "no kernel or initramfs on the boot partition (each slot has its own)" ||
  bad "a kernel or initramfs on the boot partition or in config.txt"
missing=""
strings "$boot/u-boot.bin" >"$work/u-boot.strings"
for c in fatwrite ext4load booti setexpr; do
  grep -qx "$c" "$work/u-boot.strings" || missing="$missing $c"
done
# env import / export: their error messages (the command names are not separate strings)
grep -q 'Environment import failed' "$work/u-boot.strings" || missing="$missing env-import"
grep -q 'Cannot export environment' "$work/u-boot.strings" || missing="$missing env-export"
[ -z "$missing" ] && ok "U-Boot (rpi_arm64) has the commands boot.scr uses (fatwrite, ext4load, booti, setexpr, env)" || bad "U-Boot lacks:$missing"
bootscr=$(tail -c +73 "$boot/boot.scr" | tr -d '\000')
[[ $bootscr == *"root=PARTUUID=4d4f5244-0\${mo_rootpart}"* && $bootscr == *"rauc.slot=\${mo_slot}"* && $bootscr != *"cma="* ]] &&
  ok "boot.scr: root=PARTUUID=4d4f5244-0<2|3> rauc.slot=<A|B>, no cma=" || bad "boot.scr does not start a slot by PARTUUID"
[ "$(tr -d '\000' <"$boot/mo-bootstate.env")" = "$(printf 'BOOT_ORDER=A B\nBOOT_A_LEFT=3\nBOOT_B_LEFT=0\nBOOT_TRIAL=none')" ] &&
  ok "mo-bootstate.env: slot A first, 3 attempts; slot B (empty) none" || bad "mo-bootstate.env: $(tr '\n' ' ' <"$boot/mo-bootstate.env")"
kver=$(ls "$root/usr/lib/modules" | sort -V | tail -n1)
moddir="$root/usr/lib/modules/$kver"
initrd=boot/initrd.img
[ -f "$root/boot/vmlinuz" ] && [ "$(stat -c %i "$root/boot/vmlinuz")" = "$(stat -c %i "$root/boot/vmlinuz-$kver")" ] &&
  ok "slot A: /boot/vmlinuz is vmlinuz-$kver" || bad "slot A: no /boot/vmlinuz for $kver"
[ -f "$root/$initrd" ] && ok "slot A: /boot/initrd.img ($(stat -c %s "$root/$initrd") bytes)" || bad "slot A: no /boot/initrd.img"
[ -d "$moddir" ] && ok "the image has modules for $kver: $(find "$moddir" -name '*.ko*' | wc -l) files" || bad "no /usr/lib/modules/$kver in the image"
conf="$root/etc/rauc/system.conf"
grep -qx 'compatible=masterorder-rpi-arm64' "$conf" && grep -qx 'bootloader=custom' "$conf" && grep -qx '\[slot.rootfs.0\]' "$conf" &&
  grep -qx '\[slot.rootfs.1\]' "$conf" && grep -qx 'path=/etc/rauc/keyring.pem' "$conf" && [ -x "$root/usr/bin/rauc" ] &&
  ok "RAUC: system.conf compatible masterorder-rpi-arm64, slots rootfs.0 and rootfs.1, custom backend, keyring /etc/rauc/keyring.pem" ||
  bad "RAUC: system.conf or rauc missing"
if openssl x509 -in "$root/etc/rauc/keyring.pem" -noout -ext basicConstraints 2>/dev/null | grep -q 'CA:TRUE'; then
  ok "keyring: a CA certificate ($(openssl x509 -in "$root/etc/rauc/keyring.pem" -noout -subject))"
else
  bad "keyring: /etc/rauc/keyring.pem is not a CA certificate"
fi
keys=$( { grep -rlE 'PRIVATE KEY-----' "$root/etc" "$root/usr/lib/masterorder-image" "$root/usr/share/masterorder" 2>/dev/null || true; } | sed "s|^$root||" | tr '\n' ' ')
[ -z "$keys" ] && ok "no private key in /etc (the signing key is not on the box)" || bad "private keys in the image: $keys"
[ -L "$root/etc/systemd/system/multi-user.target.wants/masterorder-commit.service" ] && ok "masterorder-commit.service enabled (mark-good once healthy)" ||
  bad "masterorder-commit.service not enabled"

# The initramfs' file list (zstd, xz or gzip; one cpio archive).
case "$(head -c 4 "$root/$initrd" | od -An -tx1 | tr -d ' ')" in
  28b52ffd) dec="zstd -dc" ;;
  fd377a58) dec="xz -dc" ;;
  1f8b*) dec="gzip -dc" ;;
  *) dec="cat" ;;
esac
$dec "$root/$initrd" | cpio -it --quiet 2>/dev/null >"$work/initrd.list" || true
echo "   initramfs: $(wc -l <"$work/initrd.list") files"

# config.txt: the lines of one [section] (up to the next [..]).
section() { awk -v s="[$1]" '/^\[/{on=($0==s); next} on' "$boot/config.txt"; }
has_line() { section "$1" >"$work/section.txt"; grep -qx "$2" "$work/section.txt"; }

# The module (or built-in) whose alias matches a device tree compatible
# (of:N*T*C<compat>), a PCI id (pci1de4,1) or a USB id (usb424,7800).
driver_for() {
  local compat=$1 pat
  case "$compat" in
    pci*,*) v=${compat#pci}; v=${v%,*}; d=${compat#*,}
      pat=$(printf 'pci:v%08Xd%08X' "0x$v" "0x$d") ;;
    usb*,*) v=${compat#usb}; v=${v%,*}; d=${compat#*,}
      pat=$(printf 'usb:v%04Xp%04X' "0x$v" "0x$d") ;;
    *) pat="of:N*T*C$compat" ;;
  esac
  # modules.alias: "alias <pattern> <module>"; the pattern may go on (C*, d*...).
  awk -v p="$pat" '$1 == "alias" && (index($2, p) == 1) { print $3; exit }' "$moddir/modules.alias"
}
builtin_for() {
  local compat=$1
  tr '\0' '\n' <"$moddir/modules.builtin.modinfo" | awk -F'[.=]' -v p="of:N*T*C$compat" 'index($0, ".alias=" p) && !f { print $1; f = 1 }'
}

# A device tree node by its compatible: prints "okay" when one such node is
# enabled (no status, or not "disabled"), "disabled" when all are, nothing
# when there is none.
node_status() {
  local dts=$1 compat=$2
  awk -v c="$compat" '
    /^[ \t]*[^ \t]+ \{$/ { depth++; comp[depth] = 0; stat[depth] = "okay"; next }
    /^[ \t]*compatible = "/ {
      s = $0; sub(/^[^"]*"/, "", s); sub(/";$/, "", s)
      n = split(s, a, /\\0/)
      for (i = 1; i <= n; i++) if (a[i] == c) comp[depth] = 1
    }
    /^[ \t]*status = "disabled"/ { stat[depth] = "disabled" }
    /^[ \t]*};$/ { if (comp[depth]) { seen = 1; if (stat[depth] == "okay") on = 1 } depth-- }
    END { if (on) print "okay"; else if (seen) print "disabled" }
  ' "$dts"
}

check_device() { # check_device MODEL DTS ROLE COMPAT [initrd]
  local model=$1 dts=$2 role=$3 compat=$4 in_initrd=${5:-} st mod file
  st=$(node_status "$dts" "$compat")
  if [ -z "$st" ]; then bad "$model: $role: no node \"$compat\" in the device tree"; return; fi
  [ "$st" = okay ] || { bad "$model: $role: node \"$compat\" is disabled in the device tree"; return; }
  mod=$(driver_for "$compat")
  if [ -n "$mod" ]; then
    file=$(modinfo -b "$root" -k "$kver" -F filename "$mod" 2>/dev/null | head -n1)
    [ -f "$file" ] || file="$root$file"
    [ -f "$file" ] || { bad "$model: $role: module $mod (for \"$compat\") has no file in the image"; return; }
    stem=$(basename "$file" | sed 's/\.ko.*//')
    if [ -n "$in_initrd" ]; then
      grep -qE "/$stem\.ko(\.xz|\.zst|\.gz)?\$" "$work/initrd.list" || { bad "$model: $role: module $mod is not in the initramfs"; return; }
      ok "$model: $role \"$compat\" enabled -> module $mod ($stem, in the image and the initramfs)"
    else
      ok "$model: $role \"$compat\" enabled -> module $mod ($stem)"
    fi
    return
  fi
  mod=$(builtin_for "$compat")
  [ -n "$mod" ] && { ok "$model: $role \"$compat\" enabled -> built into the kernel ($mod)"; return; }
  bad "$model: $role: no driver in the image matches \"$compat\""
}

# model | device tree the firmware loads | config.txt section | device_tree= (or -) |
# SD controller | Ethernet and what it hangs off (space-separated): Pi 5 the
# RP1 chip on PCIe (its MSI controller, clocks, pin control), Pi 4 GENET's
# MDIO bus, Pi 3 the USB host controller (dwc2) its USB Ethernet is on
models=(
  "Raspberry Pi 5 (C1)|bcm2712-rpi-5-b.dtb|pi5|-|brcm,bcm2712-sdhci|raspberrypi,rp1-gem pci1de4,1 brcm,bcm2712-pcie brcm,bcm2712-mip raspberrypi,rp1-clocks raspberrypi,rp1-gpio"
  "Raspberry Pi 5 (D0)|bcm2712d0-rpi-5-b.dtb|pi5|-|brcm,bcm2712-sdhci|raspberrypi,rp1-gem pci1de4,1 brcm,bcm2712-pcie brcm,bcm2712-mip raspberrypi,rp1-clocks raspberrypi,rp1-gpio"
  "Raspberry Pi 4 B|bcm2711-rpi-4-b.dtb|pi4|bcm2711-rpi-4-b.dtb|brcm,bcm2711-emmc2|brcm,bcm2711-genet-v5 brcm,genet-mdio-v5"
  "Raspberry Pi 400|bcm2711-rpi-400.dtb|pi400|bcm2711-rpi-400.dtb|brcm,bcm2711-emmc2|brcm,bcm2711-genet-v5 brcm,genet-mdio-v5"
  "Raspberry Pi 3 B+|bcm2837-rpi-3-b-plus.dtb|pi3+|bcm2837-rpi-3-b-plus.dtb|brcm,bcm2835-sdhost|usb424,7800 brcm,bcm2835-usb"
  "Raspberry Pi 3 B|bcm2837-rpi-3-b.dtb|pi3|bcm2837-rpi-3-b.dtb|brcm,bcm2835-sdhost|usb424,ec00 brcm,bcm2835-usb"
)
for m in "${models[@]}"; do
  IFS='|' read -r model dtb sec dt sd eth <<<"$m"
  echo "== $model"
  if [ ! -f "$boot/$dtb" ]; then bad "$model: $dtb is not on the boot partition"; continue; fi
  ok "$model: $dtb on the boot partition ($(stat -c %s "$boot/$dtb") bytes, model \"$(fdtget "$boot/$dtb" / model)\")"
  if grep -qx "\[$sec\]" "$boot/config.txt"; then
    if [ "$dt" = - ]; then
      ! has_line "$sec" 'device_tree=.*' && ok "$model: config.txt [$sec]: the firmware picks the tree for the board's stepping" ||
        bad "$model: config.txt [$sec] sets a device_tree"
    else
      has_line "$sec" "device_tree=$dt" && ok "$model: config.txt [$sec]: device_tree=$dt" ||
        bad "$model: config.txt [$sec] lacks device_tree=$dt"
    fi
  else
    bad "$model: config.txt has no [$sec] section"
  fi
  dtc -q -I dtb -O dts "$boot/$dtb" >"$work/tree.dts"
  check_device "$model" "$work/tree.dts" "SD card" "$sd" initrd
  for e in $eth; do
    check_device "$model" "$work/tree.dts" "Ethernet" "$e"
  done
  wdt=""
  for c in brcm,bcm2835-pm-wdt brcm,bcm2835-pm; do
    [ -n "$(node_status "$work/tree.dts" "$c")" ] && { wdt=$c; break; }
  done
  [ -n "$wdt" ] && [ "$(node_status "$work/tree.dts" "$wdt")" = okay ] && ok "$model: watchdog block \"$wdt\" enabled (bcm2835_wdt)" ||
    bad "$model: no enabled watchdog block (brcm,bcm2835-pm) in the device tree"
done

echo "== all models"
f=$(modinfo -b "$root" -k "$kver" -F filename bcm2835_wdt 2>/dev/null | head -n1)
[ -f "$f" ] || f="$root$f"
[ -f "$f" ] && grep -q '/bcm2835_wdt\.ko' "$work/initrd.list" &&
  ok "watchdog driver bcm2835_wdt in the image and the initramfs" || bad "watchdog driver bcm2835_wdt missing from the image or the initramfs"
grep -qx 'RuntimeWatchdogSec=15s' "$root/etc/systemd/system.conf.d/10-masterorder-watchdog.conf" 2>/dev/null &&
  ok "systemd: RuntimeWatchdogSec=15s" || bad "systemd: no RuntimeWatchdogSec"
grep -qx 'Storage=persistent' "$root/etc/systemd/journald.conf.d/10-masterorder.conf" 2>/dev/null &&
  grep -q ' /var/log/journal ' "$root/etc/fstab" && ok "journald: persistent, /var/log/journal on the data partition" || bad "journald: not persistent on the data partition"
[ -f "$root/usr/lib/systemd/systemd-timesyncd" ] && [ -L "$root/etc/systemd/system/sysinit.target.wants/systemd-timesyncd.service" ] &&
  ok "systemd-timesyncd installed and enabled" || bad "systemd-timesyncd not installed and enabled"
grep -qx 'UseNTP=yes' "$root/etc/systemd/network/20-wired.network" && ok "networkd: the router's NTP server from DHCP (UseNTP=yes)" || bad "networkd: no UseNTP=yes"
grep -qE '^/data/systemd +/var/lib/systemd ' "$root/etc/fstab" && ok "timesyncd's clock file (/var/lib/systemd/timesync/clock) on the data partition" || bad "/var/lib/systemd is not on the data partition"
[ -f "$root/usr/lib/clock-epoch" ] && ok "clock-epoch: the clock never starts before $(date -u -d "@$(stat -c %Y "$root/usr/lib/clock-epoch")" +%FT%TZ) (the build)" || bad "no /usr/lib/clock-epoch"
tz=$(readlink "$root/etc/localtime" 2>/dev/null || echo none)
case "$tz" in none | */UTC | */Etc/UTC) ok "OS time zone UTC ($tz; the store's zone is MasterOrder's)" ;; *) bad "OS time zone $tz, not UTC" ;; esac

echo "image-check: $passed passed, $failed failed"
[ "$failed" = 0 ]
