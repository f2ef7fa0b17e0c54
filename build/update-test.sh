#!/bin/bash
# Updates of the SD-card image under qemu-system-aarch64 -M virt (TCG), with
# Debian's U-Boot for QEMU (u-boot-qemu, qemu_arm64) in the Pi firmware's
# place: it runs the image's own boot.scr, which picks slot A or B from
# mo-bootstate.env, as the Pi's U-Boot does. Checks:
#   1. the image boots slot A and commits it (masterorder healthy ->
#      rauc status mark-good: 3 attempts for A);
#   2. a signed bundle (version V+1, the same system plus a marker file) is
#      installed into slot B with rauc install; the box restarts into B
#      (once, on trial), MasterOrder is healthy, B is committed, and
#      /data/rauc/update-result says result=ok;
#   3. (run last) refusals by RAUC on the box: a bundle signed by another key, a
#      truncated bundle, a bundle for another board;
#   4. a bundle whose MasterOrder exits at once (V+2) is installed into
#      slot A; the box starts it once, it never becomes healthy, the box
#      restarts by itself and U-Boot starts slot B again; rauc status says
#      slot A is bad and update-result says result=failed, version V+2;
#   5. a power cut (kill -9 of QEMU) while RAUC writes a bundle into slot A
#      leaves the box starting slot B, which it was running.
# Prints the time of each step.
#
#   build/update-test.sh [dist/masterorder-<v>-rpi-arm64.img.xz]
#   BOOT_TIMEOUT=1500 build/update-test.sh     # seconds per boot (default 1200)
#   NICE=0 build/update-test.sh                # QEMU at normal priority (default nice 10)
#   QUICK=1 build/update-test.sh               # steps 1 and 2 only
# Needs root (apt-get). Run it alone: it keeps both cores busy (~1 h).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
BOOT_TIMEOUT=${BOOT_TIMEOUT:-1200}
DISK_SIZE=${DISK_SIZE:-8G}
UBOOT=/usr/lib/u-boot/qemu_arm64/u-boot.bin

[ "$(id -u)" = 0 ] || { echo "update-test.sh: run as root" >&2; exit 1; }
need=()
for t in qemu-system-aarch64:qemu-system-arm mcopy:mtools ssh:openssh-client xz:xz-utils debugfs:e2fsprogs python3:python3 jq:jq rauc:rauc; do
  command -v "${t%%:*}" >/dev/null || need+=("${t#*:}")
done
[ -f "$UBOOT" ] || need+=(u-boot-qemu)
if [ ${#need[@]} -gt 0 ]; then
  echo "== apt-get install ${need[*]}"
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

image=${1:-$(ls -t dist/masterorder-*-rpi-arm64.img.xz 2>/dev/null | head -n1)}
[ -n "$image" ] && [ -f "$image" ] || { echo "update-test.sh: no image (build/image.sh)" >&2; exit 1; }
version=$(basename "$image")
version=${version#masterorder-}
version=${version%-rpi-arm64.img.xz}
rootfs=$(dirname "$image")/masterorder-$version-rpi-arm64.rootfs.ext4
[ -f "$rootfs" ] || { echo "update-test.sh: no $rootfs next to the image" >&2; exit 1; }

work=$(mktemp -d /tmp/masterorder-update.XXXXXX)
qemu_pid=""
cleanup() {
  [ -n "$qemu_pid" ] && kill -9 "$qemu_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  if [ -n "${KEEP:-}" ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; echo "--- last console lines:" >&2; tail -n 60 "$work/console.log" >&2 2>/dev/null || true; exit 1; }
passed=0
pass() { echo "ok: $*"; passed=$((passed + 1)); }
t_start=$(date +%s)
stamp() { echo "   [$(($(date +%s) - t_start)) s]"; }

echo "== image $image (version $version)"
xz -dc "$image" >"$work/disk.img"
truncate -s "$DISK_SIZE" "$work/disk.img"
fat="$work/disk.img@@1M"
ssh-keygen -q -t ed25519 -N '' -f "$work/id" -C update-test
mcopy -i "$fat" "$work/id.pub" ::/masterorder-ssh.txt
# The VM's hardware watchdog at 2 minutes (TCG on a busy machine), and the
# health bound for a new slot shortened from 600 s: the kernel command line
# from the boot partition's mo-bootargs.env (boot.cmd).
printf 'mo_extra_bootargs=systemd.watchdog_sec=2min masterorder.health_timeout=%s\n' "${HEALTH_TIMEOUT:-420}" >"$work/bootargs.env"
mcopy -i "$fat" "$work/bootargs.env" ::/mo-bootargs.env

ssh_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
vssh() {
  ssh -q -i "$work/id" -p "$ssh_port" -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
    -o ConnectTimeout=20 -o ServerAliveInterval=15 -o ServerAliveCountMax=8 -o BatchMode=yes root@127.0.0.1 "$@"
}
vscp() {
  scp -q -i "$work/id" -P "$ssh_port" -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes "$1" "root@127.0.0.1:$2"
}

power_on() {
  # Started directly so $! is QEMU itself: kill -9 of it is a power cut.
  nice -n "${NICE:-10}" qemu-system-aarch64 -M virt -cpu cortex-a72 -smp 2 -m 1024 -bios "$UBOOT" \
    -drive file="$work/disk.img",format=raw,if=virtio,cache=writeback \
    -netdev user,id=n0,hostfwd=tcp:127.0.0.1:$ssh_port-:22 -device virtio-net-pci,netdev=n0,romfile= \
    -device virtio-rng-pci -device i6300esb -display none -monitor none -serial file:"$work/console-$1.log" &
  qemu_pid=$!
  ln -sf "console-$1.log" "$work/console.log"
  echo "== power on ($1, qemu pid $qemu_pid)"
}
power_cut() {
  kill -9 "$qemu_pid"; wait "$qemu_pid" 2>/dev/null || true
  qemu_pid=""
}
slot_starts() { # 0 also while a new console file does not exist yet
  local n
  n=$(grep -c 'masterorder: booting slot' "$work/console.log" 2>/dev/null) || true
  echo "${n:-0}"
}
# wait_up N: until the box answers SSH after the Nth slot start on this
# console; prints the slot it runs (rauc.slot= of its kernel command line).
wait_up() {
  local n=$1 t0 slot
  t0=$(date +%s)
  while :; do
    kill -0 "$qemu_pid" 2>/dev/null || fail "qemu exited"
    if [ "$(slot_starts)" -ge "$n" ]; then
      slot=$(vssh 'sed -n "s/.*rauc\.slot=\([AB]\).*/\1/p" /proc/cmdline' 2>/dev/null || true)
      [ -n "$slot" ] && { echo "$slot"; return 0; }
    fi
    [ $(($(date +%s) - t0)) -lt "$BOOT_TIMEOUT" ] || fail "no SSH $BOOT_TIMEOUT s after waiting for slot start $n"
    sleep 5
  done
}
bootstate() { vssh /usr/lib/masterorder-image/bootstate show | tr '\n' ' '; }
# wait_committed SLOT: masterorder-commit.service gave the slot its 3 attempts back.
wait_committed() {
  local s=$1 t0 st
  t0=$(date +%s)
  while :; do
    st=$(bootstate 2>/dev/null || true)
    [[ $st == *"BOOT_${s}_LEFT=3 "* && $st == *"BOOT_TRIAL=none"* ]] && { echo "$st"; return 0; }
    [ $(($(date +%s) - t0)) -lt 900 ] || fail "slot $s not committed after 900 s: $st; $(vssh 'journalctl -b -q --no-pager -u masterorder-commit.service | tail -n 5' 2>/dev/null || true)"
    sleep 5
  done
}
install_bundle() { # install_bundle FILE: copied to the data partition, rauc install
  vscp "$1" /data/update.raucb || fail "scp $(basename "$1")"
  vssh 'rauc install /data/update.raucb' >"$work/install.log" 2>&1
}

# 1. First boot: slot A (the bundles are made while it boots).
power_on 1
t0=$(date +%s)

# The bundles, from this build's system image, signed by the development key.
export KEY_DIR=${KEY_DIR:-/var/lib/masterorder-build/dev-key}
variant() { # variant NAME: a copy of the system image with a marker file
  cp --sparse=always "$rootfs" "$work/$1.ext4"
  echo "$1" >"$work/marker"
  debugfs -w -R "write $work/marker /etc/masterorder-update-test" "$work/$1.ext4" >/dev/null 2>&1
}
variant good
variant broken
printf '[Service]\nExecStart=\nExecStart=/bin/false\n' >"$work/broken.conf"
debugfs -w -R "write $work/broken.conf /etc/systemd/system/masterorder.service.d/99-update-test-broken.conf" "$work/broken.ext4" >/dev/null 2>&1
variant late
for v in good broken late; do
  e2fsck -fn "$work/$v.ext4" >/dev/null 2>&1 || fail "the $v system image is not a clean file system after debugfs"
done
v1="$version-up1"; v2="$version-broken2"; v3="$version-up3"
OUT="$work/dist" BUNDLE_VERSION="$v1" build/bundle.sh "$work/good.ext4" >/dev/null
OUT="$work/dist" BUNDLE_VERSION="$v2" build/bundle.sh "$work/broken.ext4" >/dev/null
OUT="$work/dist" BUNDLE_VERSION="$v3" build/bundle.sh "$work/late.ext4" >/dev/null
good="$work/dist/masterorder-$v1-rpi-arm64.raucb"
broken="$work/dist/masterorder-$v2-rpi-arm64.raucb"
late="$work/dist/masterorder-$v3-rpi-arm64.raucb"
# Refused ones, made from a small file system (RAUC refuses them before it
# writes anything, and they cross the VM's network quickly): signed by
# another key, truncated, for another board.
mkdir -p "$work/small/etc"
head -c 4000000 /dev/urandom >"$work/small/etc/random"
mke2fs -q -t ext4 -d "$work/small" "$work/small.ext4" 16M
KEY_DIR="$work/other-key" OUT="$work/other" BUNDLE_VERSION="$v1" build/bundle.sh "$work/small.ext4" >/dev/null 2>&1
otherkey="$work/other/masterorder-$v1-rpi-arm64.raucb"
OUT="$work/smallok" BUNDLE_VERSION="$v1" build/bundle.sh "$work/small.ext4" >/dev/null
head -c $(($(stat -c %s "$work/smallok/masterorder-$v1-rpi-arm64.raucb") / 2)) "$work/smallok/masterorder-$v1-rpi-arm64.raucb" >"$work/truncated.raucb"
mkdir -p "$work/board/in"
cp --sparse=always "$work/small.ext4" "$work/board/in/rootfs.ext4"
printf '[update]\ncompatible=another-board-arm64\nversion=%s\n\n[bundle]\nformat=plain\n\n[image.rootfs]\nfilename=rootfs.ext4\n' "$v1" >"$work/board/in/manifest.raucm"
rauc bundle --cert="$KEY_DIR/signing.cert.pem" --key="$KEY_DIR/signing.key.pem" "$work/board/in" "$work/board.raucb" >/dev/null 2>&1
pass "bundles made: $(ls -s --block-size=M "$good" | cut -d' ' -f1) each ($v1 good, $v2 MasterOrder exits at once, $v3 for the power cut; refused: another key, truncated, another board)"
stamp

slot=$(wait_up 1)
[ "$slot" = A ] || fail "first boot started slot $slot"
pass "first boot: slot A, SSH after $(($(date +%s) - t0)) s"
st=$(wait_committed A)
pass "slot A committed by masterorder-commit.service $(($(date +%s) - t0)) s after power-on: $st"
vssh 'rauc status --output-format=json' >"$work/status-1.json" || fail "rauc status"
[ "$(jq -r .booted "$work/status-1.json")" = A ] && [ "$(jq -r .compatible "$work/status-1.json")" = masterorder-rpi-arm64 ] ||
  fail "rauc status: $(cat "$work/status-1.json")"
pass "rauc status: compatible masterorder-rpi-arm64, booted A, primary $(jq -r .boot_primary "$work/status-1.json")"
stamp

# 2. A good update into slot B.
t0=$(date +%s)
install_bundle "$good" || fail "rauc install $v1: $(tail -n 5 "$work/install.log")"
st=$(bootstate)
[[ $st == *"BOOT_ORDER=B A "*"BOOT_B_LEFT=1 "*"BOOT_TRIAL=B"* ]] || fail "after install: $st"
pass "rauc install $v1 into slot B in $(($(date +%s) - t0)) s; boot state: $st"
vssh 'systemctl reboot' || true
t0=$(date +%s)
slot=$(wait_up 2)
[ "$slot" = B ] || fail "after the update the box started slot $slot"
[ "$(vssh cat /etc/masterorder-update-test)" = good ] || fail "slot B does not hold the new system"
pass "restarted into slot B (the new system's marker file), SSH after $(($(date +%s) - t0)) s"
st=$(wait_committed B)
pass "slot B committed $(($(date +%s) - t0)) s after the restart: $st"
res=$(vssh cat /data/rauc/update-result | tr '\n' ' ')
[[ $res == *"result=ok "*"slot=B "*"version=$v1 "* ]] || fail "update-result: $res"
pass "update-result: $res"
vssh 'rauc status --output-format=json' >"$work/status-2.json"
[ "$(jq -r .booted "$work/status-2.json")" = B ] || fail "rauc status after the update: $(cat "$work/status-2.json")"
stamp

if [ "${QUICK:-0}" = 1 ]; then
  echo; echo "update-test (QUICK=1: install and commit only): $passed passed, 0 failed, $(($(date +%s) - t_start)) s"; exit 0
fi

# 4. An update that never becomes healthy falls back by itself.
t0=$(date +%s)
install_bundle "$broken" || fail "rauc install $v2: $(tail -n 5 "$work/install.log")"
pass "rauc install $v2 (MasterOrder exits at once) into slot A: $(bootstate)"
starts=$(slot_starts)
vssh 'systemctl reboot' || true
slot=$(wait_up $((starts + 2)))
[ "$slot" = B ] || fail "after the failed update the box runs slot $slot"
grep 'masterorder: booting slot' "$work/console.log" | tail -n 3 | sed 's/^/   console: /'
grep 'masterorder: booting slot' "$work/console.log" | tail -n 2 | head -n1 | grep -q 'booting slot A' ||
  fail "the broken slot A was not started once before the fallback"
pass "the box started the broken slot A once, then slot B by itself ($(($(date +%s) - t0)) s after the restart)"
res=$(vssh 'for i in $(seq 60); do grep -q result=failed /data/rauc/update-result 2>/dev/null && break; sleep 2; done; cat /data/rauc/update-result' | tr '\n' ' ')
[[ $res == *"result=failed "*"slot=A "*"version=$v2 "* ]] || fail "update-result after the fallback: $res"
pass "the box reports the failed update: $res"
vssh 'rauc status --output-format=json' >"$work/status-4.json"
jq -e '.booted == "B" and ([.slots[] | to_entries[] | select(.key == "rootfs.0") | .value.boot_status][0] == "bad")' "$work/status-4.json" >/dev/null ||
  fail "rauc status after the fallback: $(cat "$work/status-4.json")"
pass "rauc status: booted B, slot rootfs.0 boot status bad"
prev=$(vssh 'journalctl -b -1 -q --no-pager -u masterorder.service -u masterorder-commit.service | grep -E "Failed with result|not healthy|restarting into" | tail -n 3' || true)
echo "$prev" | sed 's/^/   journal of the broken boot: /'
[[ $prev == *"restarting into the previous system"* ]] || fail "the broken boot's journal does not show the fallback"
pass "the broken boot's journal: masterorder failed, masterorder-commit restarted the box"
st=$(wait_committed B)
pass "slot B stays committed: $st"
stamp

# 5. A power cut while a bundle is written.
vscp "$late" /data/update.raucb || fail "scp"
(vssh 'rauc install /data/update.raucb' >"$work/install-cut.log" 2>&1 || true) &
inst=$!
t0=$(date +%s)
bad_since=""
while :; do
  st=$(bootstate 2>/dev/null || true)
  # RAUC marks the target slot bad before it writes it, then copies.
  if [[ $st == *"BOOT_A_LEFT=0 "* ]]; then
    [ -n "$bad_since" ] || bad_since=$(date +%s)
    grep -q 'Copying' "$work/install-cut.log" && break
    [ $(($(date +%s) - bad_since)) -lt 20 ] || break # no progress lines: 20 s into the install
  fi
  [[ $st == *"BOOT_A_LEFT=1 "* ]] && fail "the install finished before the power cut: $st"
  [ $(($(date +%s) - t0)) -lt 600 ] || fail "the install never started writing: $(tail -n 3 "$work/install-cut.log")"
  sleep 1
done
sleep 2
progress=$(tr '\r' '\n' <"$work/install-cut.log" | grep -E '%' | tail -n1)
power_cut
wait "$inst" 2>/dev/null || true
pass "power cut (kill -9 of QEMU) while RAUC wrote slot A (${progress:-no progress line}; boot state was: $st)"
power_on 5
t0=$(date +%s)
slot=$(wait_up 1)
[ "$slot" = B ] || fail "after the power cut the box started slot $slot"
[ "$(vssh cat /etc/masterorder-update-test)" = good ] || fail "the box does not run the system it ran before the cut"
pass "after the power cut the box started slot B, the system it ran ($(($(date +%s) - t0)) s)"
st=$(wait_committed B)
[[ $st == *"BOOT_A_LEFT=0 "* ]] || fail "the half-written slot A has attempts: $st"
pass "slot A (half written) has no attempts; slot B committed: $st"
stamp

# 3. Refusals (RAUC on the box; nothing is written, the boot state stays).
st=$(bootstate)
for r in otherkey:"$otherkey" truncated:"$work/truncated.raucb" board:"$work/board.raucb"; do
  name=${r%%:*}; f=${r#*:}
  if install_bundle "$f"; then fail "rauc installed the $name bundle"; fi
  pass "refused ($name): $(grep -iE 'error|fail|refus|not|mismatch' "$work/install.log" | tail -n1 | cut -c1-200)"
done
st2=$(bootstate)
[ "$st2" = "$st" ] || fail "a refused bundle changed the boot state: $st -> $st2"
pass "boot state unchanged by the refusals: $st2"
stamp

echo
echo "update-test: $passed passed, 0 failed, $(($(date +%s) - t_start)) s"
