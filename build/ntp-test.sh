#!/usr/bin/env bash
# build/ntp-test.sh — NTP end to end: Debian's chrony serves time from a
# network namespace, this machine's systemd-timesyncd syncs to it, and a
# box (`masterorder demo --nodes 1`) then reports its clock's source as
# "ntp" on the cluster status (docs/operations.md "The clock").
#
#   sudo build/ntp-test.sh --server-only   the chrony server in its namespace
#                                          answers (a one-shot measurement that
#                                          sets nothing): safe anywhere
#   sudo MO_NTP_DISPOSABLE=1 build/ntp-test.sh
#                                          the whole run
#
# The whole run changes THIS MACHINE's kernel clock discipline:
# systemd-timesyncd clears the kernel's "unsynchronised" flag (adjtimex),
# which stays cleared for hours, and may slew the clock. The kernel clock
# is not namespaced, so there is no way to keep it to a test: run it on a
# disposable VM (or the lead's own machine), never on a machine shared
# with other test runs. The chrony server runs with -x (it never touches
# the clock) and serves this machine's own time, so nothing is stepped.
#
# Needs: root, go (builds the binary from this checkout). Installs with
# apt-get: iproute2 curl jq systemd-timesyncd and chrony's libraries;
# chrony itself is downloaded and unpacked, not installed (Debian's chrony
# and systemd-timesyncd conflict: both are a time daemon).
set -euo pipefail

server_only=0
[ "${1:-}" = "--server-only" ] && server_only=1
if [ "$(id -u)" != 0 ]; then
	echo "ntp-test: run as root (network namespaces, port 123, timesyncd)" >&2
	exit 1
fi
if [ "$server_only" = 0 ] && [ "${MO_NTP_DISPOSABLE:-}" != 1 ]; then
	echo "ntp-test: the whole run changes this machine's kernel clock discipline for hours;" >&2
	echo "          run it on a disposable VM with MO_NTP_DISPOSABLE=1, or use --server-only" >&2
	exit 2
fi

repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/mo-ntp-test.XXXXXX)
chmod 755 "$work" # apt-get download writes as _apt
ns=mo-ntp-$$
host_if=mont$$a
ns_if=mont$$b
host_ip=10.123.45.1
ns_ip=10.123.45.2
pids=()
started_timesyncd=""
restart_timesyncd=0

cleanup() {
	set +e
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	[ -n "$started_timesyncd" ] && kill "$started_timesyncd" 2>/dev/null
	wait 2>/dev/null
	rm -f /run/systemd/timesyncd.conf.d/mo-ntp-test.conf
	[ "$restart_timesyncd" = 1 ] && systemctl restart systemd-timesyncd
	ip link del "$host_if" 2>/dev/null
	ip netns del "$ns" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

export DEBIAN_FRONTEND=noninteractive
apt-get install -y --no-install-recommends iproute2 curl jq systemd-timesyncd >/dev/null
# chrony, unpacked: its libraries installed, the package itself not.
(cd "$work" && apt-get download chrony >/dev/null)
apt-get install -y --no-install-recommends $(apt-cache depends chrony | awk '/ Depends: lib/ {print $2}') >/dev/null
dpkg-deb -x "$work"/chrony_*.deb "$work/chrony"
chronyd="$work/chrony/usr/sbin/chronyd"

# The NTP server's network: a namespace on a veth pair.
ip netns add "$ns"
ip link add "$host_if" type veth peer name "$ns_if"
ip link set "$ns_if" netns "$ns"
ip addr add "$host_ip/30" dev "$host_if"
ip link set "$host_if" up
ip -n "$ns" addr add "$ns_ip/30" dev "$ns_if"
ip -n "$ns" link set "$ns_if" up
ip -n "$ns" link set lo up

cat >"$work/server.conf" <<EOF
# Serve this machine's own clock (never adjusted: chronyd -x).
local stratum 8
allow $host_ip/32
bindaddress $ns_ip
cmdport 0
pidfile $work/chronyd.pid
driftfile $work/chrony.drift
EOF
ip netns exec "$ns" "$chronyd" -f "$work/server.conf" -x -u root -d -L 0 >"$work/chronyd.log" 2>&1 &
pids+=($!)
sleep 1

# The server answers: a one-shot client measurement that sets nothing.
measured=""
for _ in 1 2 3 4 5; do
	if measured=$("$chronyd" -Q -u root -t 15 "server $ns_ip iburst maxsamples 4" 2>&1); then
		break
	fi
	sleep 2
done
echo "$measured" | grep -q "System clock wrong by" || {
	echo "ntp-test: FAIL: the chrony server in $ns did not answer" >&2
	echo "$measured" >&2
	cat "$work/chronyd.log" >&2
	exit 1
}
echo "ntp-test: chrony serves time from namespace $ns ($ns_ip): $(echo "$measured" | grep -o 'System clock wrong by.*')"
if [ "$server_only" = 1 ]; then
	echo "ntp-test: PASS (server only)"
	exit 0
fi

# This machine syncs to it with systemd-timesyncd.
mkdir -p /run/systemd/timesyncd.conf.d
printf '[Time]\nNTP=%s\nFallbackNTP=\n' "$ns_ip" >/run/systemd/timesyncd.conf.d/mo-ntp-test.conf
if [ "$(cat /proc/1/comm)" = systemd ]; then
	restart_timesyncd=1
	systemctl restart systemd-timesyncd
else
	/lib/systemd/systemd-timesyncd >"$work/timesyncd.log" 2>&1 &
	started_timesyncd=$!
fi

# A box on this machine.
(cd "$repo" && go build -o "$work/masterorder" .)
"$work/masterorder" demo --nodes 1 --listen 127.0.0.1:18080 --data-dir "$work/demo" >"$work/demo.log" 2>&1 &
pids+=($!)
source=""
for _ in $(seq 1 120); do
	st=$(curl -fsS http://127.0.0.1:18080/api/cluster/status 2>/dev/null || true)
	source=$(echo "$st" | jq -r '.clock.source // empty' 2>/dev/null || true)
	[ "$source" = ntp ] && break
	sleep 1
done
echo "ntp-test: the box's clock: $(echo "$st" | jq -c .clock 2>/dev/null)"
(cd "$repo" && go test -count=1 -v -run TestKernelSyncedOnThisMachine ./node/wallclock/ | grep 'this kernel' || true)
if [ "$source" != ntp ]; then
	echo "ntp-test: FAIL: the box reports its clock from '${source:-nothing}', want ntp" >&2
	[ -f "$work/timesyncd.log" ] && tail -20 "$work/timesyncd.log" >&2
	command -v timedatectl >/dev/null && timedatectl timesync-status >&2 || true
	exit 1
fi
echo "ntp-test: PASS: synced by systemd-timesyncd from chrony in $ns; the box says its clock is from ntp"
