#!/bin/bash
# Boot the SD-card image on the Raspberry Pi machines Debian's QEMU
# emulates, with the image's own kernel and initramfs (from system slot A),
# device tree (from its boot partition) and the image as the emulated SD card, to systemd's
# multi-user target; then read what is inside through the serial console:
#   raspi3b  Raspberry Pi 3 B   bcm2837-rpi-3-b.dtb
#   raspi4b  Raspberry Pi 4 B   bcm2711-rpi-4-b.dtb
# QEMU comes from Debian trixie (10.0: the first Debian QEMU with raspi4b),
# run from a trixie chroot made with mmdebstrap and cached, so this works on
# a bookworm machine as well.
#
# What differs from a real board, on purpose and only here:
#   - QEMU loads kernel, initramfs and tree itself (-kernel/-initrd/-dtb):
#     the Pi firmware (bootcode.bin/start*.elf, config.txt) and U-Boot
#     (u-boot.bin, boot.scr: build/update-test.sh runs that script under
#     -M virt) are not run;
#   - the kernel command line is the one boot.scr gives slot A, with the console on
#     the first UART (ttyAMA0, where QEMU's first -serial is) and a root shell
#     on it (systemd.debug_shell) instead of the login prompt, so this script
#     can ask the box what it sees, and systemd.watchdog_sec=off: QEMU's
#     model of the Pi's power manager resets the machine as soon as the
#     watchdog is started (it does not count down), so with the card's
#     RuntimeWatchdogSec=15s raspi3b was reset each time systemd started;
#   - raspi4b: a copy of the tree with the blocks QEMU does not model set to
#     status "disabled" (fdtput), listed at $disable4 below with the reason;
#   - the card is the image grown to 8 GiB (QEMU wants a power of two).
# Each machine boots twice (the second time a power cut: QEMU is killed), so
# the persistent journal, the machine ID and the clock file are seen across
# a reboot.
#
#   build/pi-boot-test.sh [dist/masterorder-<v>-rpi-arm64.img.xz]
#   MACHINES="raspi4b" BOOT_TIMEOUT=2400 BOOTS=1 build/pi-boot-test.sh ...
# Needs root (chroot). Run it alone: TCG keeps both cores busy for minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
MACHINES=${MACHINES:-raspi3b raspi4b}
BOOT_TIMEOUT=${BOOT_TIMEOUT:-2400}
BOOTS=${BOOTS:-2}
CACHE_DIR=${CACHE_DIR:-/var/cache/masterorder-build}
MIRROR=${MIRROR:-http://deb.debian.org/debian}

[ "$(id -u)" = 0 ] || { echo "pi-boot-test.sh: run as root (chroot)" >&2; exit 1; }
need=()
for t in debugfs:e2fsprogs mmdebstrap:mmdebstrap mcopy:mtools fdtput:device-tree-compiler xz:xz-utils; do
  command -v "${t%%:*}" >/dev/null || need+=("${t#*:}")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "== apt-get install ${need[*]}"
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

image=${1:-$(ls -t dist/masterorder-*-rpi-arm64.img.xz 2>/dev/null | head -n1)}
[ -n "$image" ] && [ -f "$image" ] || { echo "pi-boot-test.sh: no image (build/image.sh makes one)" >&2; exit 1; }

# QEMU from trixie, in a chroot of its own (cached).
q="$CACHE_DIR/qemu-trixie-amd64"
if [ ! -x "$q/usr/bin/qemu-system-aarch64" ]; then
  echo "== mmdebstrap trixie with qemu-system-arm (cached in $q)"
  rm -rf "$q.tmp"
  mkdir -p "$CACHE_DIR"
  nice -n 10 mmdebstrap --quiet --variant=apt --include=qemu-system-arm,ipxe-qemu trixie "$q.tmp" "deb $MIRROR trixie main"
  mv "$q.tmp" "$q"
fi
echo "   $(chroot "$q" qemu-system-aarch64 --version | head -n1)"

work=$(mktemp -d "$q/tmp/pi-boot.XXXXXX")
in_q=/tmp/$(basename "$work")
qemu_pid=""
reader_pid=""
cleanup() {
  [ -n "$qemu_pid" ] && kill -9 "$qemu_pid" 2>/dev/null || true
  [ -n "$reader_pid" ] && kill "$reader_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  exec 3>&- 2>/dev/null || true
  mountpoint -q "$q/dev" && umount "$q/dev"
  mountpoint -q "$q/proc" && umount "$q/proc"
  if [ -n "${KEEP:-}" ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM
mount --bind /dev "$q/dev"
mount -t proc proc "$q/proc"

passed=0
failed=0
ok() { echo "ok:   $*"; passed=$((passed + 1)); }
bad() { echo "FAIL: $*"; failed=$((failed + 1)); }

echo "== image $image"
xz -dc "$image" >"$work/image.img"
fat="$work/image.img@@1M"
# Slot A (partition 2): its /boot/vmlinuz and /boot/initrd.img, as boot.scr loads them.
slot_a=$(sfdisk -J "$work/image.img" | python3 -c 'import json,sys; p=json.load(sys.stdin)["partitiontable"]["partitions"][1]; print(p["start"], p["size"])')
dd if="$work/image.img" of="$work/slot-a.ext4" bs=512 skip="${slot_a% *}" count="${slot_a#* }" conv=sparse status=none
debugfs -R "dump /boot/vmlinuz $work/vmlinuz" "$work/slot-a.ext4" 2>/dev/null
debugfs -R "dump /boot/initrd.img $work/initrd" "$work/slot-a.ext4" 2>/dev/null
rm -f "$work/slot-a.ext4"
[ -s "$work/vmlinuz" ] && [ -s "$work/initrd" ] || { echo "pi-boot-test.sh: no /boot/vmlinuz or /boot/initrd.img in slot A" >&2; exit 1; }
# boot.scr's command line for slot A, without its consoles (set below).
echo "root=PARTUUID=4d4f5244-02 rootfstype=ext4 ro rootwait fsck.repair=yes net.ifnames=0 systemd.show_status=auto rauc.slot=A" >"$work/cmdline.txt"
echo "   kernel and initramfs from slot A ($(stat -c %s "$work/vmlinuz") and $(stat -c %s "$work/initrd") bytes)"

# Blocks of the Pi 4 that QEMU's raspi4b does not model (QEMU itself already
# disables pcie, rng200, thermal and genet in the tree it is given). Reading
# their registers is a synchronous external abort and the kernel panics:
#   brcm,l2-intc, brcm,bcm7271-l2-intc  the second-level interrupt
#                                       controllers (AON, HDMI)
#   brcm,bcm2711-hdmi-i2c              the HDMI ports' DDC I2C
#   brcm,brcm2711-dvp                  the HDMI clock/reset block (its gate
#                                       is read when unused clocks are cut)
# and what hangs off them, the display pipeline: the two HDMI blocks, the
# video encoder, the pixel valves, the HVS, the VC5 and its writeback.
disable4="brcm,l2-intc brcm,bcm7271-l2-intc brcm,bcm2711-hdmi-i2c brcm,brcm2711-dvp brcm,bcm2711-hdmi0 brcm,bcm2711-hdmi1 brcm,bcm2711-vec brcm,bcm2711-pixelvalve0 brcm,bcm2711-pixelvalve1 brcm,bcm2711-pixelvalve2 brcm,bcm2711-pixelvalve3 brcm,bcm2711-pixelvalve4 brcm,bcm2711-hvs brcm,bcm2711-vc5 brcm,bcm2711-txp"

nodes_compatible() { # nodes_compatible DTB COMPAT: the paths of the nodes whose compatible list has COMPAT
  dtc -q -I dtb -O dts "$1" | awk -v c="$2" '
    /^[ \t]*[^ \t]+ \{$/ { depth++; path[depth] = (depth == 1) ? "" : path[depth - 1] "/" $1; next }
    /^[ \t]*compatible = "/ {
      s = $0; sub(/^[^"]*"/, "", s); sub(/";$/, "", s)
      n = split(s, a, /\\0/)
      for (i = 1; i <= n; i++) if (a[i] == c) print (path[depth] == "" ? "/" : path[depth])
    }
    /^[ \t]*};$/ { depth-- }'
}

disable_compatible() { # disable_compatible DTB COMPAT...: prints what it disabled
  local dtb=$1 c p
  shift
  for c in "$@"; do
    for p in $(nodes_compatible "$dtb" "$c"); do
      fdtput -t s "$dtb" "$p" status disabled
      echo "   disabled $p ($c)"
    done
  done
}

send() { printf '%s\n' "$*" >&3; }
console_has() { tr -d '\r' <"$1" | grep -q "$2"; }

boot() { # boot MACHINE N: power on; sets boot_seconds; leaves qemu running
  local m=$1 n=$2 dtb args t0 log="$work/console-$m-$n.log"
  case "$m" in
    raspi3b) dtb=bcm2837-rpi-3-b.dtb ;;
    raspi4b) dtb=bcm2711-rpi-4-b.dtb ;;
    *) echo "unknown machine $m" >&2; exit 2 ;;
  esac
  if [ "$n" = 1 ]; then
    mcopy -n -i "$fat" "::/$dtb" "$work/$m.dtb"
    if [ "$m" = raspi4b ]; then
      echo "   test copy of $dtb for QEMU:"
      # shellcheck disable=SC2086
      disable_compatible "$work/$m.dtb" $disable4
      # The SD card's power and I/O-voltage regulators are switched through
      # the firmware's GPIO expander (raspberrypi-exp-gpio), whose mailbox
      # calls QEMU does not answer: the regulators fail with EIO and emmc2
      # never probes. Without the supply properties the MMC core uses its
      # dummy regulators (QEMU's card has power anyway).
      # QEMU's raspi4b puts the card on the Arasan controller (mmc@7e300000,
      # the Wi-Fi's on a real Pi 4), not on emmc2: its Wi-Fi power sequence
      # (a reset line on the firmware's GPIO expander) would hold its probe
      # for ever, so the test tree drops it.
      for p in $(nodes_compatible "$work/$m.dtb" brcm,bcm2835-sdhci); do
        fdtput -d "$work/$m.dtb" "$p" mmc-pwrseq
        echo "   removed mmc-pwrseq from $p (brcm,bcm2835-sdhci: where QEMU puts the card)"
      done
      for p in $(nodes_compatible "$work/$m.dtb" brcm,bcm2711-emmc2); do
        fdtput -d "$work/$m.dtb" "$p" vmmc-supply
        fdtput -d "$work/$m.dtb" "$p" vqmmc-supply
        echo "   removed vmmc-supply, vqmmc-supply from $p (brcm,bcm2711-emmc2)"
      done
    fi
    # The card: a copy of the image, grown to a power of two.
    cp --sparse=always "$work/image.img" "$work/card-$m.img"
    truncate -s 8G "$work/card-$m.img"
  fi
  args="$(tr ' ' '\n' <"$work/cmdline.txt" | grep -v '^console=' | grep . | tr '\n' ' ')"
  args="$args console=ttyAMA0,115200 systemd.debug_shell=ttyAMA0 systemd.mask=serial-getty@ttyAMA0.service systemd.watchdog_sec=off systemd.show_status=yes"
  rm -f "$work/ser.in" "$work/ser.out"
  mkfifo "$work/ser.in" "$work/ser.out"
  t0=$(date +%s)
  chroot "$q" nice -n 10 qemu-system-aarch64 -M "$m" \
    -kernel "$in_q/vmlinuz" -initrd "$in_q/initrd" -dtb "$in_q/$m.dtb" -append "$args" \
    -drive file="$in_q/card-$m.img",if=sd,format=raw \
    -chardev pipe,id=ser,path="$in_q/ser" -serial chardev:ser \
    -display none -monitor none &
  qemu_pid=$!
  cat "$work/ser.out" >"$log" &
  reader_pid=$!
  exec 3<>"$work/ser.in"
  echo "== $m boot $n: power on (qemu pid $qemu_pid); kernel command line: $args"
  # The root shell answers once systemd has started it; then wait for the
  # boot to finish (systemctl is-system-running --wait).
  local probed=0
  shell=0
  while :; do
    kill -0 "$qemu_pid" 2>/dev/null || { bad "$m boot $n: qemu exited"; tail -n 30 "$log"; return 1; }
    [ $(($(date +%s) - t0)) -lt "$BOOT_TIMEOUT" ] || { bad "$m boot $n: no shell after $BOOT_TIMEOUT s"; tr -d '\r' <"$log" | tail -n 40; return 1; }
    if console_has "$log" 'MO-SHELL-2$'; then shell=1; break; fi
    # The debug shell can miss the console: it starts before /dev/ttyAMA0
    # exists on raspi3b ("Failed at step STDIN") and gives up after three
    # tries. Then what systemd prints on the console is what we read.
    if console_has "$log" 'Reached target.*multi-user.target\|Reached target.*Multi-User System' &&
      console_has "$log" 'debug-shell.service.*start request repeated too quickly\|Failed to start.*debug-shell'; then
      shell=0; break
    fi
    if console_has "$log" 'Kernel panic'; then bad "$m boot $n: kernel panic"; tr -d '\r' <"$log" | grep -B 30 'Kernel panic' | tail -n 40; return 1; fi
    if console_has "$log" 'Dropping to a shell'; then bad "$m boot $n: the initramfs found no root file system"; tr -d '\r' <"$log" | tail -n 40; return 1; fi
    if console_has "$log" 'login:\|debug shell\|Started.*Debug Shell\|root@\|# $' || [ $(($(date +%s) - t0)) -gt 60 ]; then
      send 'test -d /run/systemd/system && echo MO-SHELL-$((1+1))'
      probed=$((probed + 1))
    fi
    sleep 10
  done
  if [ "$shell" = 0 ]; then
    boot_seconds=$(($(date +%s) - t0))
    echo "   multi-user.target reached $boot_seconds s after power-on (no shell on the console: read from systemd's console output)"
    return 0
  fi
  send 'timeout 1800 systemctl is-system-running --wait; echo MO-BOOTED-$((1+1))'
  while ! console_has "$log" 'MO-BOOTED-2$'; do
    kill -0 "$qemu_pid" 2>/dev/null || { bad "$m boot $n: qemu exited"; return 1; }
    [ $(($(date +%s) - t0)) -lt "$BOOT_TIMEOUT" ] || { bad "$m boot $n: boot did not finish in $BOOT_TIMEOUT s"; return 1; }
    sleep 5
  done
  boot_seconds=$(($(date +%s) - t0))
  echo "   boot finished $boot_seconds s after power-on ($(tr -d '\r' <"$log" | grep -B1 'MO-BOOTED-2$' | head -n1))"
}

ask() { # ask MACHINE N: what the box sees, printed between markers
  local m=$1 n=$2 log="$work/console-$m-$n.log"
  send 'echo MO-BEGIN-$((1+1))'
  send 'echo "model: $(tr -d "\0" </proc/device-tree/model)"; echo "kernel: $(uname -r)"'
  send 'echo "root: $(findmnt -no SOURCE,OPTIONS /)"; echo "boot: $(findmnt -no SOURCE,OPTIONS /boot/firmware)"'
  send 'echo "data: $(findmnt -bno SOURCE,SIZE /data)"; echo "journal-mount: $(findmnt -no SOURCE /var/log/journal)"'
  send 'echo "target: $(systemctl is-active multi-user.target)"; echo "state: $(systemctl is-system-running)"'
  send 'for u in masterorder systemd-timesyncd avahi-daemon masterorder-machine-id systemd-journal-flush; do echo "unit $u: $(systemctl is-active $u)"; done'
  send 'echo "failed: $(systemctl --failed --plain --no-legend | cut -d" " -f1 | tr "\n" " ")"'
  send 'echo "clock: $(date -u +%FT%TZ) $(timedatectl show -p NTPSynchronized --value | sed s/^/synced=/)"; echo "clockfile: $(ls -l --time-style=+%FT%T /var/lib/systemd/timesync/clock 2>&1)"'
  send 'echo "machine-id: $(cat /etc/machine-id) saved $(cat /data/machine-id)"'
  send 'echo "boots: $(journalctl --list-boots --no-pager -q | wc -l)"; echo "journal-files: $(ls /var/log/journal/$(cat /etc/machine-id) | wc -l) $(du -sh /var/log/journal | cut -f1)"'
  send 'echo "watchdog: $(systemctl show -p RuntimeWatchdogUSec --value) device $(ls /dev/watchdog0 2>&1)"'
  send 'echo "setup-page: $(timeout 10 bash -c "exec 3<>/dev/tcp/127.0.0.1/80; printf \"GET / HTTP/1.0\r\n\r\n\" >&3; head -n1 <&3" 2>&1)"'
  send 'echo "startup: $(systemd-analyze time 2>&1 | head -n1)"'
  send 'echo MO-END-$((1+1))'
  local t0
  t0=$(date +%s)
  while ! console_has "$log" 'MO-END-2$'; do
    [ $(($(date +%s) - t0)) -lt 600 ] || { bad "$m boot $n: no answer on the console"; return 1; }
    sleep 5
  done
  tr -d '\r' <"$log" | awk '/MO-BEGIN-2$/{on=1; next} /MO-END-2$/{on=0} on' | grep -E '^[a-z-]+( [a-z-]+)?: ' >"$work/seen-$m-$n.txt"
  sed 's/^/   /' "$work/seen-$m-$n.txt"
}

seen() { sed -n "s/^$1: //p" "$work/seen-$m-$n.txt" | head -n1; }

# power_cut kills QEMU (a power cut) and the console reader.
power_cut() {
  kill -9 "$qemu_pid"; wait "$qemu_pid" 2>/dev/null || true
  qemu_pid=""
  kill "$reader_pid" 2>/dev/null || true; wait "$reader_pid" 2>/dev/null || true
  reader_pid=""
  exec 3>&-
  echo "   power cut (qemu killed)"
}

console_checks() { # console_checks MACHINE N: what systemd and the kernel printed on the console
  local m=$1 n=$2 c="$work/console-$m-$n.txt"
  sleep 120 # the units after multi-user.target's own start (masterorder waits for the network)
  tr -d '\r' <"$work/console-$m-$n.log" | sed 's/\x1b\[[0-9;]*m//g' >"$c"
  grep -q 'Reached target.*multi-user.target\|Reached target.*Multi-User System' "$c" && ok "$m boot $n: multi-user.target reached in $boot_seconds s: $(grep -m1 'Reached target.*[Mm]ulti-[Uu]ser' "$c" | cut -c1-120)" || bad "$m boot $n: no multi-user.target"
  grep -qE 'EXT4-fs \(mmcblk[0-9]p2\): mounted filesystem .* ro ' "$c" && ok "$m boot $n: root on the emulated SD card, read-only: $(grep -m1 -E 'EXT4-fs \(mmcblk[0-9]p2\): mounted' "$c" | cut -c1-110)" || bad "$m boot $n: root not seen on mmcblk*p2"
  grep -qE 'EXT4-fs \(mmcblk[0-9]p4\): resized filesystem' "$c" && ok "$m boot $n: data partition grown: $(grep -m1 -E 'EXT4-fs \(mmcblk[0-9]p4\): resized' "$c")" || bad "$m boot $n: data partition not grown"
  # systemd shortens long status lines ("masterorder-machine-id.se…"): a
  # unit is matched by the first 18 characters of its name.
  for u in 'masterorder-machine-id.service' 'systemd-journal-flush.service' 'systemd-timesyncd.service' 'avahi-daemon.service' 'masterorder.service'; do
    grep -qE "\[  OK  \] (Started|Finished) ${u:0:18}" "$c" && ok "$m boot $n: $u: $(grep -m1 -E "\[  OK  \] (Started|Finished) ${u:0:18}" "$c" | sed 's/^.*\] //' | cut -c1-120)" || bad "$m boot $n: $u not started"
  done
  grep -q 'var-log-journal.mount\|Mounted .*/var/log/journal' "$c" && ok "$m boot $n: /var/log/journal mounted (the data partition)" || bad "$m boot $n: /var/log/journal not mounted"
  echo "   failed units on the console: $(grep -E '^\[FAILED\]|FAILED\]' "$c" | sed 's/.*Failed to start //' | tr '\n' ';')"
}

for m in $MACHINES; do
  for n in $(seq 1 "$BOOTS"); do
    if ! boot "$m" "$n"; then break; fi
    if [ "$shell" = 0 ]; then
      console_checks "$m" "$n"
      power_cut
      continue
    fi
    ask "$m" "$n" || true
    [ "$(seen target)" = active ] && ok "$m boot $n: multi-user.target reached ($(seen state)) in $boot_seconds s" || bad "$m boot $n: multi-user.target $(seen target)"
    [[ $(seen root) =~ ^/dev/mmcblk[0-9]p2\ ro, ]] && ok "$m boot $n: root file system on the emulated SD card, read-only ($(seen root))" || bad "$m boot $n: root $(seen root)"
    [[ $(seen data) =~ ^/dev/mmcblk[0-9]p4\  ]] && [ "$(seen data | cut -d' ' -f2)" -gt $((2 * 1024 * 1024 * 1024)) ] && ok "$m boot $n: data partition grown to the card ($(seen data))" || bad "$m boot $n: data $(seen data)"
    [ "$(seen 'unit masterorder')" = active ] && ok "$m boot $n: masterorder active; setup page: $(seen setup-page)" || bad "$m boot $n: masterorder $(seen 'unit masterorder')"
    [[ $(seen journal-mount) == *"[/journal]" ]] && ok "$m boot $n: journal on the data partition ($(seen journal-mount)), $(seen boots) boot(s) in it" || bad "$m boot $n: journal mount $(seen journal-mount)"
    if [ "$n" -gt 1 ]; then
      [ "$(seen boots)" -ge "$n" ] && ok "$m boot $n: the journal keeps the earlier boots ($(seen boots) boots listed)" || bad "$m boot $n: journal lists $(seen boots) boots"
      prev=$(sed -n 's/^machine-id: //p' "$work/seen-$m-$((n - 1)).txt" | cut -d' ' -f1)
      [ "$(seen machine-id | cut -d' ' -f1)" = "$prev" ] && ok "$m boot $n: same machine ID as the boot before ($prev)" || bad "$m boot $n: machine ID changed ($prev -> $(seen machine-id))"
    fi
    echo "   failed units: $(seen failed)"
    # A power cut: QEMU killed.
    power_cut
  done
done
echo "pi-boot-test: $passed passed, $failed failed"
[ "$failed" = 0 ]
