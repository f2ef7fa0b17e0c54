#!/bin/bash
# Boot the SD-card image under qemu-system-aarch64 -M virt (TCG: minutes),
# started as a Pi starts it after its firmware: Debian's U-Boot (for QEMU,
# u-boot-qemu, in the Pi firmware + u-boot-rpi's place) runs the image's
# boot.scr, which picks system slot A from mo-bootstate.env and starts the
# kernel and initramfs in it; and check what an owner would see:
#   - the setup page answers on port 80 (through a forwarded port),
#   - the box's _masterorder._tcp announcement is seen by mDNS on the VM's
#     network (a tap in a network namespace this script makes),
#   - the OS: hostname masterorder-XXXX, root and boot read-only, data
#     partition grown to the disk (4 KiB blocks), the journal on the data
#     partition within its cap, systemd running the hardware watchdog (the
#     VM has an i6300esb), no swap, no failed unit (checked over SSH,
#     switched on by masterorder-ssh.txt on the boot partition as the
#     owner's guide says),
#   - the A/B system: slot A started (rauc.slot=A), RAUC sees both slots,
#     the keyring is there, and masterorder-commit.service keeps slot A once
#     MasterOrder is healthy (3 boot attempts again);
#   - the clock (issue 37): the VM's real-time clock starts years back (a Pi
#     has none), systemd-timesyncd runs, its clock file is on the data
#     partition, the NTP server the DHCP server offers is the one it uses,
#     the OS time zone is UTC;
#   - after a hard stop of the VM (a power cut) it boots to the same state:
#     same announcement, same setup identity, data intact, the journal
#     still has the first boot, the machine ID is the same, and the clock
#     is not earlier than the one the box last knew (set forward in boot 1
#     as NTP would, kept in timesyncd's clock file);
#   - a box whose boot partition cannot be mounted does not serve the setup
#     page (the unit requires the mount: no claim without the owner's code);
#   - HANG_TEST=1 (default): the masterorder process stopped (SIGSTOP) is
#     restarted by its unit's watchdog, in setup mode and then as a
#     one-box store (made with masterorder init), which after the restart
#     says why in its status (nodes[].lastRestart.reason "watchdog").
# Prints the image sizes and the time from power-on to the setup page.
#
#   build/boot-test.sh [dist/masterorder-<v>-rpi-arm64.img.xz]
#   BOOT_TIMEOUT=1200 build/boot-test.sh ...     # seconds per boot (default 900)
#   POWER_CUT=0 HANG_TEST=1 build/boot-test.sh   # one boot, then the boot partition and hang tests
# Needs root (network namespace, tap). Run it alone: it keeps both cores busy.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
export PATH="/usr/local/go/bin:$PATH"
BOOT_TIMEOUT=${BOOT_TIMEOUT:-900}
DISK_SIZE=${DISK_SIZE:-8G}
UBOOT=/usr/lib/u-boot/qemu_arm64/u-boot.bin
# The VM's real-time clock at power-on: years before any build (a Pi has no
# real-time clock at all; the box must not start earlier than it last knew).
RTC_BASE=${RTC_BASE:-2021-01-01T00:00:00}

[ "$(id -u)" = 0 ] || { echo "boot-test.sh: run as root (network namespace, tap device)" >&2; exit 1; }
need=()
for t in qemu-system-aarch64:qemu-system-arm mcopy:mtools dnsmasq:dnsmasq-base ssh:openssh-client curl:curl xz:xz-utils; do
  command -v "${t%%:*}" >/dev/null || need+=("${t#*:}")
done
# virtio-net-pci's option ROM (a Recommends of qemu-system-arm).
[ -e /usr/lib/ipxe/qemu/efi-virtio.rom ] || need+=(ipxe-qemu)
[ -f "$UBOOT" ] || need+=(u-boot-qemu)
if [ ${#need[@]} -gt 0 ]; then
  echo "== apt-get install ${need[*]}"
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

image=${1:-$(ls -t dist/masterorder-*-rpi-arm64.img.xz 2>/dev/null | head -n1)}
[ -n "$image" ] && [ -f "$image" ] || { echo "boot-test.sh: no image (build/image.sh makes dist/masterorder-<v>-rpi-arm64.img.xz)" >&2; exit 1; }

work=$(mktemp -d /tmp/masterorder-boot.XXXXXX)
ns=mo-boot-$$
qemu_pid=""
dnsmasq_pid=""
cleanup() {
  [ -n "$qemu_pid" ] && kill -9 "$qemu_pid" 2>/dev/null || true
  [ -n "$dnsmasq_pid" ] && kill "$dnsmasq_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  ip netns del "$ns" 2>/dev/null || true
  if [ -n "${KEEP:-}" ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; echo "--- last console lines:" >&2; tail -n 40 "$work"/console-*.log >&2 2>/dev/null || true; exit 1; }
passed=0
pass() { echo "ok: $*"; passed=$((passed + 1)); }

echo "== image $image"
xz -dc "$image" >"$work/disk.img"
compressed=$(wc -c <"$image")
uncompressed=$(wc -c <"$work/disk.img")
echo "   $compressed bytes compressed, $uncompressed bytes uncompressed"
# A bigger "card", so the first boot has room to grow the data partition.
truncate -s "$DISK_SIZE" "$work/disk.img"

fat="$work/disk.img@@1M"
# The Pi's consoles are not the VM's: boot.scr picks console=ttyAMA0 on
# QEMU. systemd.watchdog_sec: the VM's hardware watchdog (an i6300esb) at 2
# minutes instead of the card's 15 s. Under TCG on a busy machine PID1 can go
# more than 15 s without petting it (seen: a daemon-reload during this test,
# and the VM was reset); the card's own setting is what image-check reads.
# Extra kernel arguments go in mo-bootargs.env on the boot partition.
echo 'mo_extra_bootargs=systemd.watchdog_sec=2min' >"$work/bootargs.env"
mcopy -i "$fat" "$work/bootargs.env" ::/mo-bootargs.env

# SSH on, as the owner's guide says: a masterorder-ssh.txt with a public key.
ssh-keygen -q -t ed25519 -N '' -f "$work/id" -C boot-test
mcopy -i "$fat" "$work/id.pub" ::/masterorder-ssh.txt

# The VM's network: a tap in a namespace of our own, with a DHCP server,
# plus user-mode networking forwarding ports 80 and 22 to 127.0.0.1 inside it.
ip netns add "$ns"
nsx() { ip netns exec "$ns" "$@"; }
nsx ip link set lo up
nsx ip tuntap add dev motap0 mode tap
nsx ip addr add 10.213.0.1/24 dev motap0
nsx ip link set motap0 up
nsx ip route add 224.0.0.0/4 dev motap0 # mDNS: the probe's multicast goes to the VM's network
nsx dnsmasq --keep-in-foreground --port=0 --interface=motap0 --bind-interfaces \
  --dhcp-range=10.213.0.10,10.213.0.50,1h --dhcp-leasefile="$work/leases" --dhcp-option=option:ntp-server,10.213.0.1 \
  --pid-file="$work/dnsmasq.pid" --log-facility="$work/dnsmasq.log" &
dnsmasq_pid=$!
(cd build && go build -o "$work/mdnsprobe" ./cmd/mdnsprobe)
http_port=8080 # inside our own fresh namespace: nothing else listens there
ssh_port=2222

vssh() {
  nsx ssh -q -i "$work/id" -p "$ssh_port" -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
    -o ConnectTimeout=20 -o ServerAliveInterval=15 -o ServerAliveCountMax=8 -o BatchMode=yes root@127.0.0.1 "$@"
}

boot() { # boot N: power on, wait for the setup page; sets boot_seconds
  local n=$1
  local t0
  t0=$(date +%s)
  # Started directly (not through nsx, a function, which would run in a
  # subshell): ip netns exec and nice exec, so $! is qemu itself and
  # kill -9 of it is a power cut.
  ip netns exec "$ns" nice -n 10 qemu-system-aarch64 -M virt -cpu cortex-a72 -smp 2 -m 1024 \
    -bios "$UBOOT" -rtc base="$RTC_BASE",clock=vm \
    -drive file="$work/disk.img",format=raw,if=virtio,cache=writeback \
    -netdev tap,id=lan,ifname=motap0,script=no,downscript=no -device virtio-net-pci,netdev=lan,mac=52:54:00:4d:4f:21 \
    -netdev user,id=fwd,hostfwd=tcp:127.0.0.1:$http_port-:80,hostfwd=tcp:127.0.0.1:$ssh_port-:22 -device virtio-net-pci,netdev=fwd \
    -device virtio-rng-pci -device i6300esb -display none -monitor none -serial file:"$work/console-$n.log" &
  qemu_pid=$!
  echo "== boot $n: power on (qemu pid $qemu_pid), waiting up to $BOOT_TIMEOUT s for the setup page"
  while :; do
    kill -0 "$qemu_pid" 2>/dev/null || fail "qemu exited during boot $n"
    code=$(nsx curl -sL -o "$work/page-$n.html" -w '%{http_code}' --max-time 10 "http://127.0.0.1:$http_port/" || true)
    [ "$code" = 200 ] && break
    [ $(($(date +%s) - t0)) -lt "$BOOT_TIMEOUT" ] || fail "boot $n: no setup page after $BOOT_TIMEOUT s (last HTTP status ${code:-none})"
    sleep 5
  done
  boot_seconds=$(($(date +%s) - t0))
  kill -0 "$qemu_pid" 2>/dev/null || fail "boot $n: qemu is not running"
  grep -q "Linux version" "$work/console-$n.log" || fail "boot $n: this VM's console shows no kernel"
  grep -q "masterorder: booting slot A" "$work/console-$n.log" || fail "boot $n: U-Boot's boot.scr did not start slot A"
  pass "boot $n: setup page answers (HTTP 200 after redirects, $(wc -c <"$work/page-$n.html") bytes) $boot_seconds s after power-on"
}

announced() { # announced N: the _masterorder._tcp announcement on the tap
  nsx "$work/mdnsprobe" -iface motap0 -timeout 5s -tries 6 >"$work/mdns-$1.json" || fail "boot $1: no _masterorder._tcp announcement seen on the VM's network"
  pass "boot $1: mDNS announcement seen: $(head -c 300 "$work/mdns-$1.json")"
}

os_checks() { # os_checks N
  local n=$1 out
  out=$(vssh 'echo "hostname: $(hostname)"; echo "root: $(findmnt -no OPTIONS /)"; echo "boot: $(findmnt -no OPTIONS /boot/firmware)"; \
    echo "data: $(findmnt -bno SIZE /data)"; echo "swaps: $(swapon --show --noheadings | wc -l)"; \
    echo "journal-mount: $(findmnt -no SOURCE /var/log/journal)"; echo "boots: $(journalctl --list-boots --no-pager -q | wc -l)"; \
    echo "journal-size: $(du -sk /var/log/journal | cut -f1)"; \
    echo "machine-id: $(cat /etc/machine-id) $(cat /data/machine-id)"; \
    echo "active: $(systemctl is-active masterorder.service avahi-daemon.service systemd-timesyncd.service | tr "\n" " ")"; \
    echo "failed: $(systemctl --failed --plain --no-legend | wc -l) $(systemctl --failed --plain --no-legend | cut -d" " -f1 | tr "\n" " ")"; \
    echo "watchdog: $(systemctl show -p RuntimeWatchdogUSec --value) $(ls /dev/watchdog0 2>&1)"; \
    echo "watchdog-log: $(journalctl -b -q --no-pager _PID=1 | grep -m1 -i "watchdog" | cut -c1-200)"; \
    echo "clock: $(date -u +%s)"; echo "clock-epoch: $(stat -c %Y /usr/lib/clock-epoch 2>&1)"; echo "clockfile: $(stat -c %Y /var/lib/systemd/timesync/clock 2>&1)"; \
    echo "clockfile-mount: $(findmnt -no SOURCE -T /var/lib/systemd/timesync)"; \
    echo "timezone: $(readlink /etc/localtime || echo none) $(date +%Z)"; \
    echo "ntp: $(timedatectl show-timesync -p LinkNTPServers --value 2>&1 | tr "\n" " ")"; \
    echo "slot: $(sed -n "s/.*rauc\.slot=\([AB]\).*/\1/p" /proc/cmdline)"; \
    echo "rauc: $(rauc status --output-format=json 2>&1 | head -c 600)"; \
    echo "keyring: $(test -s /etc/rauc/keyring.pem && echo present)"; \
    echo "bootstate: $(/usr/lib/masterorder-image/bootstate show | tr "\n" " ")"; \
    echo "data-fs: $(tune2fs -l $(findmnt -no SOURCE /data) | grep -E "^(Block size|Journal size|Inode count|Block count):" | tr -s " " | tr "\n" ";")"; \
    echo "cmdline: $(cat /proc/cmdline)"') || fail "boot $n: ssh to the box"
  echo "$out" >"$work/os-$n.txt"
  sed 's/^/   /' "$work/os-$n.txt"
  v() { sed -n "s/^$1: //p" "$work/os-$n.txt" | head -n1; }
  [[ $(v hostname) =~ ^masterorder-[0-9a-f]{4}$ ]] || fail "hostname $(v hostname)"
  pass "boot $n: hostname $(v hostname)"
  [[ $(v root) == ro,* ]] || fail "root mounted $(v root)"
  [[ $(v boot) == ro,* ]] || fail "boot partition mounted $(v boot)"
  pass "boot $n: root and boot partitions read-only"
  [ "$(v data)" -gt $((2 * 1024 * 1024 * 1024)) ] || fail "data partition $(v data) bytes: not grown"
  pass "boot $n: data partition grown to the disk ($(v data) bytes; $(v data-fs))"
  [[ $(v data-fs) == *"Block size: 4096"* ]] || fail "data partition's block size: $(v data-fs)"
  pass "boot $n: data file system has 4 KiB blocks"
  [ "$(v swaps)" = 0 ] || fail "swap is on"
  pass "boot $n: no swap"
  [[ $(v journal-mount) == *"[/journal]" ]] || fail "journal not on the data partition: $(v journal-mount)"
  [ "$(v journal-size)" -lt $((64 * 1024 + 8 * 1024)) ] || fail "journal bigger than its cap: $(v journal-size) KiB"
  pass "boot $n: journal on the data partition ($(v journal-mount), $(v journal-size) KiB), $(v boots) boot(s) in it"
  if [ "$n" -gt 1 ]; then
    [ "$(v boots)" -ge "$n" ] || fail "the journal lists $(v boots) boots after boot $n"
    pass "boot $n: the journal still has the boot before the power cut ($(v boots) boots listed)"
    [ "$(v machine-id | cut -d' ' -f1)" = "$(sed -n 's/^machine-id: //p' "$work/os-1.txt" | cut -d' ' -f1)" ] || fail "machine ID changed: $(v machine-id)"
    pass "boot $n: same machine ID as boot 1"
  fi
  [ "$(v active)" = "active active active " ] || fail "masterorder, avahi-daemon, systemd-timesyncd: $(v active)"
  pass "boot $n: masterorder, avahi-daemon and systemd-timesyncd active"
  [[ $(v watchdog) == "2min /dev/watchdog0" ]] || fail "hardware watchdog: $(v watchdog)"
  pass "boot $n: systemd runs the hardware watchdog ($(v watchdog), the test's systemd.watchdog_sec)"
  [ "$(v failed | cut -d' ' -f1)" = 0 ] || fail "failed units: $(v failed)"
  pass "boot $n: no failed unit"
  [[ " $(v cmdline) " != *" cma="* ]] || fail "the kernel command line has cma=: $(v cmdline)"
  [ "$(v slot)" = A ] || fail "slot $(v slot) running, not A"
  [[ $(v rauc) == *'"compatible":"masterorder-rpi-arm64"'* && $(v rauc) == *'"booted":"A"'* && $(v rauc) == *'"rootfs.1"'* ]] || fail "rauc status: $(v rauc)"
  [ "$(v keyring)" = present ] || fail "no /etc/rauc/keyring.pem"
  pass "boot $n: slot A started by U-Boot's boot.scr; rauc status sees slots rootfs.0 and rootfs.1 (compatible masterorder-rpi-arm64); keyring present; $(v bootstate)"
  [[ $(v clockfile-mount) == *"[/systemd]" ]] && [[ $(v clockfile) =~ ^[0-9]+$ ]] || fail "timesyncd's clock file: $(v clockfile) on $(v clockfile-mount)"
  [ "$(v clock)" -ge "$(v clock-epoch)" ] || fail "the clock ($(v clock)) is before the image's build ($(v clock-epoch))"
  pass "boot $n: timesyncd's clock file on the data partition ($(v clockfile-mount), $(date -u -d "@$(v clockfile)" +%FT%TZ))"
  [[ $(v timezone) == *" UTC" ]] || fail "OS time zone: $(v timezone)"
  [[ " $(v ntp) " == *" 10.213.0.1 "* ]] || fail "timesyncd does not use the DHCP server's NTP server: $(v ntp)"
  pass "boot $n: OS time zone UTC ($(v timezone)); NTP server from DHCP: $(v ntp)"
  vssh 'cd / && find etc/masterorder var/lib/masterorder -type f -print0 | sort -z | xargs -0 -r sha256sum' >"$work/state-$n.txt"
}

unit_prop() { sed -n "s/^$1=//p" <<<"$2" | head -n1; }
# HTTP to the box's own loopback, from inside it (the image has no curl):
# guest_get PATH prints the response, guest_code PATH its status code
# (empty when nothing answers within 5 s).
guest_get() {
  vssh "timeout 10 bash -c 'exec 3<>/dev/tcp/127.0.0.1/80 && printf \"GET $1 HTTP/1.0\\r\\nHost: 127.0.0.1\\r\\n\\r\\n\" >&3 && cat <&3'" 2>/dev/null | tr -d '\r'
}
guest_code() {
  vssh "timeout 5 bash -c 'exec 3<>/dev/tcp/127.0.0.1/80 && printf \"GET $1 HTTP/1.0\\r\\nHost: 127.0.0.1\\r\\n\\r\\n\" >&3 && head -n1 <&3'" 2>/dev/null | tr -d '\r' | cut -d' ' -f2
}

hang_test() { # hang_test MODE URL: SIGSTOP the process; its unit's watchdog restarts it
  local mode=$1 url=$2 props pid t0 now code
  echo "== hang test ($mode): SIGSTOP the masterorder process"
  props=$(vssh 'systemctl show masterorder.service -p Type -p MainPID -p WatchdogUSec -p NRestarts') || fail "ssh: unit properties"
  pid=$(unit_prop MainPID "$props")
  [ "$(unit_prop Type "$props")" = notify ] && [ "$(unit_prop WatchdogUSec "$props")" != 0 ] && [ "$(unit_prop WatchdogUSec "$props")" != infinity ] ||
    fail "masterorder.service has no watchdog (Type=$(unit_prop Type "$props"), WatchdogUSec=$(unit_prop WatchdogUSec "$props"))"
  echo "   Type=notify, WatchdogSec=$(unit_prop WatchdogUSec "$props"), main PID $pid, restarts so far $(unit_prop NRestarts "$props")"
  vssh "kill -STOP $pid" || fail "ssh: kill -STOP"
  t0=$(date +%s)
  sleep 3
  code=$(guest_code "$url" || true)
  [ -z "$code" ] || fail "the stopped process still answers ($code)"
  pass "$mode: process $pid stopped (SIGSTOP): GET $url gets no answer"
  while :; do
    now=$(vssh 'systemctl show masterorder.service -p MainPID -p ActiveState -p NRestarts') || true
    if [ -n "$now" ] && [ "$(unit_prop MainPID "$now")" != "$pid" ] && [ "$(unit_prop MainPID "$now")" != 0 ] && [ "$(unit_prop ActiveState "$now")" = active ]; then
      break
    fi
    [ $(($(date +%s) - t0)) -lt 600 ] || fail "masterorder not restarted 600 s after SIGSTOP"
    sleep 2
  done
  hang_seconds=$(($(date +%s) - t0))
  until [ "$(guest_code "$url" || true)" = 200 ]; do
    [ $(($(date +%s) - t0)) -lt 900 ] || fail "$url does not answer after the watchdog restart"
    sleep 2
  done
  pass "$mode: restarted by its unit's watchdog $hang_seconds s after SIGSTOP (new PID $(unit_prop MainPID "$now"), NRestarts $(unit_prop NRestarts "$now")); GET $url answers again $(($(date +%s) - t0)) s after SIGSTOP"
  # systemd's own lines about the unit (the process's goroutine dump names
  # node/watchdog too, hence _PID=1).
  vssh 'journalctl -b -q --no-pager -o short-monotonic _PID=1 UNIT=masterorder.service | grep -E "Watchdog timeout|Main process exited|Failed with result|Scheduled restart" | tail -n 4' >"$work/hang-journal-$mode.txt" || true
  sed 's/^/   journal: /' "$work/hang-journal-$mode.txt"
  grep -q "Failed with result 'watchdog'" "$work/hang-journal-$mode.txt" || fail "systemd did not end the unit for its watchdog"
  pass "$mode: systemd ended the unit with result 'watchdog' and restarted it"
}

make_member() { # the box becomes a one-box store (as init --systemd makes one), so it reports why it restarted
  echo "== the box becomes a member (a one-box store from masterorder init)"
  vssh 'set -e; rm -rf /tmp/store; masterorder init --shop-id boottest --nodes a=127.0.0.1:80:7000 --out /tmp/store --systemd --plain-http >/dev/null; \
    install -o masterorder -g masterorder -m 0640 /tmp/store/a.toml /etc/masterorder/masterorder.toml; \
    for f in ca.pem a.pem a-key.pem; do install -o masterorder -g masterorder -m 0640 /tmp/store/tls/$f /etc/masterorder/tls/$f; done; \
    rm -rf /tmp/store; systemctl restart masterorder.service' || fail "ssh: make the box a member"
  local t0
  t0=$(date +%s)
  until [ "$(guest_code /readyz || true)" = 200 ]; do
    [ $(($(date +%s) - t0)) -lt 600 ] || fail "the one-box store is not ready after 600 s"
    sleep 3
  done
  pass "one-box store ready $(($(date +%s) - t0)) s after its start"
}

hang_reason() { # after the restart the member says why, in its status (the Boxes page's source)
  local out
  out=$(guest_get /api/cluster/status | grep -o '"lastRestart":{[^}]*}' | head -n1) || true
  echo "   status: ${out:-no lastRestart}"
  [[ $out == *'"reason":"watchdog"'* ]] || fail "after the restart the box does not say it was its watchdog: ${out:-no lastRestart}"
  pass "after the restart the box says why (GET /api/cluster/status, nodes[].lastRestart): $out"
}

commit_check() { # masterorder-commit.service keeps slot A once MasterOrder is healthy
  local t0 st
  t0=$(date +%s)
  until [[ $(st=$(vssh /usr/lib/masterorder-image/bootstate show | tr '\n' ' '); echo "$st") == *"BOOT_A_LEFT=3 "* ]]; do
    [ $(($(date +%s) - t0)) -lt 600 ] || fail "slot A not committed: $(vssh /usr/lib/masterorder-image/bootstate show | tr '\n' ' '); $(vssh 'journalctl -b -q --no-pager -u masterorder-commit.service | tail -n 3')"
    sleep 5
  done
  pass "boot $1: masterorder healthy, slot A kept (rauc status mark-good): $(vssh 'journalctl -b -q --no-pager -o cat -u masterorder-commit.service | grep -m1 "keeping slot"')"
}

clock_forward() { # the clock set forward as NTP would; timesyncd keeps it in its clock file
  local target saved
  target=$(($(date +%s) + 3 * 86400))
  saved=$(vssh "date -u -s @$target >/dev/null; for i in \$(seq 60); do [ \$(stat -c %Y /var/lib/systemd/timesync/clock) -ge $target ] && break; sleep 2; done; stat -c %Y /var/lib/systemd/timesync/clock") || fail "ssh: set the clock"
  [ "$saved" -ge "$target" ] || fail "timesyncd did not save the clock set to $target (its file says $saved)"
  # timesyncd saves by setting the file's time, which ext4 makes durable
  # at its next journal commit (every 5 s): a power cut sooner loses that
  # save on a real box too, so the box "knows" the time once that passed.
  sleep 7
  clock_known=$saved
  pass "clock set to $(date -u -d "@$target" +%FT%TZ) (3 days ahead of this machine); timesyncd saved it in its clock file ($(date -u -d "@$saved" +%FT%TZ))"
}

boot 1
first_boot=$boot_seconds
announced 1
os_checks 1
commit_check 1
echo "   state: $(wc -l <"$work/state-1.txt") files in /etc/masterorder and /var/lib/masterorder"

if [ "${POWER_CUT:-1}" = 1 ]; then
clock_forward
echo "== power cut: kill -9 qemu"
kill -9 "$qemu_pid"; wait "$qemu_pid" 2>/dev/null || true
! kill -0 "$qemu_pid" 2>/dev/null || fail "qemu $qemu_pid survived kill -9"
pgrep -f "console-1.log" >/dev/null && fail "the first VM is still running"
qemu_pid=""
nsx curl -s -o /dev/null --max-time 5 "http://127.0.0.1:$http_port/" && fail "the setup page still answers after the power cut"
pass "powered off: qemu gone, nothing answers"
boot 2
second_boot=$boot_seconds
announced 2
os_checks 2
now2=$(sed -n 's/^clock: //p' "$work/os-2.txt")
[ "$now2" -ge "$clock_known" ] || fail "after the power cut the clock ($now2) is earlier than the box last knew ($clock_known); the VM's clock started at $RTC_BASE"
pass "after the power cut (the VM's clock at $RTC_BASE again) the box's clock is $(date -u -d "@$now2" +%FT%TZ), not earlier than it last knew ($(date -u -d "@$clock_known" +%FT%TZ))"
cmp -s "$work/mdns-1.json" "$work/mdns-2.json" || { diff "$work/mdns-1.json" "$work/mdns-2.json" || true; fail "the announcement changed across the power cut"; }
pass "same announcement after the power cut"
# Setup identity and data kept; files the box rewrites on purpose (none
# expected in setup mode) would show here.
cmp -s "$work/state-1.txt" "$work/state-2.txt" || { diff "$work/state-1.txt" "$work/state-2.txt" || true; fail "the box's files changed across the power cut"; }
pass "same setup identity and files after the power cut"
fi

echo "== a boot partition that cannot be mounted"
# As if the card's boot partition could not be mounted (a damaged FAT):
# for this boot only, its mount unit mounts a path that does not exist. The
# unit requires the mount, so the box must stop, serve nothing and take no
# claim, instead of reading "no setup code" from the empty /boot/firmware.
# (Masking the mount unit would not do: systemd adds RequiresMountsFor=
# dependencies only on mount units it can load. A partition that never
# shows up fails the mount as this does, after its device timeout.)
out=$(vssh 'systemctl stop boot-firmware.mount; mkdir -p /run/systemd/system/boot-firmware.mount.d; \
  printf "[Mount]\nWhat=/nonexistent/boot-partition\n" >/run/systemd/system/boot-firmware.mount.d/broken.conf; systemctl daemon-reload; \
  echo "masterorder: $(systemctl is-active masterorder.service)"; \
  systemctl start masterorder.service 2>&1 | head -n1; echo "after start: $(systemctl is-active masterorder.service)"; \
  echo "boot mounted: $(findmnt -n /boot/firmware >/dev/null && echo yes || echo no)"') || fail "ssh: boot partition test"
echo "$out" | sed 's/^/   /'
grep -qx 'masterorder: inactive' <<<"$out" && grep -qE '^after start: (inactive|failed)$' <<<"$out" && grep -qx 'boot mounted: no' <<<"$out" ||
  fail "masterorder ran without the boot partition"
code=$(nsx curl -s -o /dev/null -w '%{http_code}' --max-time 10 "http://127.0.0.1:$http_port/" || true)
[ "$code" = 000 ] || fail "the setup page answers ($code) without the boot partition"
pass "without its boot partition the box does not start (no setup page, no claim)"
vssh 'rm -r /run/systemd/system/boot-firmware.mount.d; systemctl daemon-reload; systemctl start masterorder.service' || fail "ssh: restore the boot partition"
t0=$(date +%s)
until [ "$(nsx curl -sL -o /dev/null -w '%{http_code}' --max-time 10 "http://127.0.0.1:$http_port/" || true)" = 200 ]; do
  [ $(($(date +%s) - t0)) -lt 300 ] || fail "no setup page after the boot partition came back"
  sleep 3
done
pass "boot partition mounted again: setup page back after $(($(date +%s) - t0)) s"

if [ "${HANG_TEST:-1}" = 1 ]; then
  hang_test setup /setup/
  make_member
  hang_test member /healthz
  hang_reason
fi

echo
echo "image: $compressed bytes compressed ($(( compressed / 1024 / 1024 )) MiB), $uncompressed bytes uncompressed ($(( uncompressed / 1024 / 1024 )) MiB)"
echo "power-on to setup page under qemu TCG (-smp 2, cortex-a72): first boot $first_boot s, after the power cut ${second_boot:-(not run)} s"
[ -z "${hang_seconds:-}" ] || echo "hang test: SIGSTOP to restarted process ${hang_seconds} s (member)"
echo "boot-test: $passed passed, 0 failed"
