#!/usr/bin/env bash
# bench/pairs.sh: MasterOrder's closed loop beside etcd, run in interleaved
# pairs so that both see the same machine: for each --callers level, N
# pairs, each etcd (bench/etcd) then MasterOrder (`masterorder bench
# --closed-loop`, three local nodes), same --duration and --warmup. Prints
# one table: every pair's throughput, p99, CPU µs per op per node and summed
# over the cluster, bytes written per op summed, the ratios, and the medians.
#
#   bench/pairs.sh [--callers 16,64] [--pairs 4] [--duration 20s] [--warmup 5s]
#                  [--sessions 6000] [--leader-only] [--out DIR]
#
# --leader-only addresses both at the leader (every order to the Raft
# leader, as phones reach the store by its name; every etcd put through
# the leader's client); without it both spread over the three. The table
# header names the addressing.
#
# It installs what it uses (Debian's etcd-server and jq), builds both
# binaries into DIR, and keeps every run's text and JSON report there.
# CPU per op is the steadiest figure on a shared machine: orders/s is the
# CPU there is over what an op costs, the cost per op is not.
set -euo pipefail

callers=16,64
pairs=4
duration=20s
warmup=5s
sessions=6000
leader_only=()
addressing=spread
out=""
while [ $# -gt 0 ]; do
	case "$1" in
	--callers) callers=$2; shift 2 ;;
	--pairs) pairs=$2; shift 2 ;;
	--duration) duration=$2; shift 2 ;;
	--warmup) warmup=$2; shift 2 ;;
	--sessions) sessions=$2; shift 2 ;;
	--leader-only) leader_only=(--leader-only); addressing=leader; shift ;;
	--out) out=$2; shift 2 ;;
	-h | --help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "pairs.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done
case "$pairs" in '' | *[!0-9]* | 0) echo "pairs.sh: --pairs must be a number ≥ 1" >&2; exit 2 ;; esac

need=()
command -v etcd >/dev/null || need+=(etcd-server)
command -v jq >/dev/null || need+=(jq)
if [ ${#need[@]} -gt 0 ]; then
	apt-get install -y "${need[@]}" >/dev/null || { apt-get update >/dev/null && apt-get install -y "${need[@]}" >/dev/null; }
fi

repo=$(cd "$(dirname "$0")/.." && pwd)
[ -n "$out" ] || out=$(mktemp -d /tmp/pairs.XXXXXX)
mkdir -p "$out"
out=$(cd "$out" && pwd)
echo "pairs.sh: building into $out" >&2
(cd "$repo" && go build -o "$out/masterorder" .)
# bench/etcd is a module of its own; -mod=mod lets it resolve from the
# module cache or the Go module proxy.
(cd "$repo/bench/etcd" && GOFLAGS=-mod=mod go build -o "$out/etcdbench" .)

records="$out/pairs.jsonl"
: >"$records"
IFS=, read -r -a levels <<<"$callers"
for c in "${levels[@]}"; do
	for p in $(seq 1 "$pairs"); do
		base="$out/c$c-p$p"
		echo "pairs.sh: $c callers, pair $p of $pairs: etcd" >&2
		"$out/etcdbench" --concurrency "$c" --duration "$duration" --warmup "$warmup" "${leader_only[@]}" --json "$base-etcd.json" >"$base-etcd.txt" 2>&1 ||
			{ echo "pairs.sh: etcd run failed, see $base-etcd.txt" >&2; cat "$base-etcd.txt" >&2; exit 1; }
		echo "pairs.sh: $c callers, pair $p of $pairs: MasterOrder" >&2
		# Exit 1 is a run that saw replays or duplicates: it is reported.
		rc=0
		"$out/masterorder" bench --closed-loop --concurrency "$c" --duration "$duration" --warmup "$warmup" \
			--sessions "$sessions" "${leader_only[@]}" --no-progress --json "$base-mo.json" >"$base-mo.txt" 2>&1 || rc=$?
		if [ ! -s "$base-mo.json" ]; then
			echo "pairs.sh: MasterOrder run failed (exit $rc), see $base-mo.txt" >&2
			cat "$base-mo.txt" >&2
			exit 1
		fi
		# Figures of the two addressings are never mixed: each report says
		# which one it used.
		for f in "$base-etcd.json" "$base-mo.json"; do
			got=$(jq -r '.addressing // "spread"' "$f")
			[ "$got" = "$addressing" ] || { echo "pairs.sh: $f says addressing $got, want $addressing" >&2; exit 1; }
		done
		jq -c -n --argjson callers "$c" --argjson pair "$p" --argjson rc "$rc" \
			--slurpfile e "$base-etcd.json" --slurpfile m "$base-mo.json" '
			{callers: $callers, pair: $pair, ok: ($rc == 0), addressing: $m[0].addressing,
			 etcd: {rate: $e[0].putsPerSecond, p99: $e[0].latencyMs.p99,
			        cpu: [$e[0].members[].cpuMicrosPerPut], cpuSum: $e[0].cluster.cpuMicrosPerPut,
			        bytesSum: $e[0].cluster.writtenBytesPerPut},
			 mo: {rate: $m[0].ordersPerSecond, p99: $m[0].latencyMs.p99,
			      cpu: [$m[0].nodes[].cpuMicrosPerOrder], cpuSum: $m[0].cluster.cpuMicrosPerOrder,
			      bytesSum: $m[0].cluster.writtenBytesPerOrder,
			      rejections: ($m[0].rejections | add // 0)}}' >>"$records"
	done
done

# The table: one row per pair, then the medians of each callers level (the
# per node CPU as the medians of the lowest, middle and highest node, since
# which node leads differs from run to run).
jq -r -s --arg duration "$duration" --arg warmup "$warmup" --arg out "$out" --arg addressing "$addressing" '
def median: sort | if length == 0 then null elif length % 2 == 1 then .[length/2|floor] else (.[length/2-1] + .[length/2]) / 2 end;
def r(d): if . == null then "-" elif d == 0 then round | tostring
  else (. * pow(10; d) | round) as $n | ($n / pow(10; d) | floor | tostring) + "." +
    ($n % (pow(10; d) | round) | tostring | if length < d then ("0" * (d - length)) + . else . end) end;
def nodes: map(r(0)) | join("/");
def ratio(a; b): if b > 0 then a / b else null end;
def row(name; e; m; x; y):
  [name, (e.rate|r(0)), (e.p99|r(1)), (e.cpu|nodes), (e.cpuSum|r(0)), (e.bytesSum|r(0)),
   (m.rate|r(0)), (m.p99|r(1)), (m.cpu|nodes), (m.cpuSum|r(0)), (m.bytesSum|r(0)), (x|r(2)), (y|r(2))] | join(" | ") | "| " + . + " |";
"closed loop beside etcd: \([.[].callers]|unique|map(tostring)|join(" and ")) callers, \(length) pairs in all, measured \($duration) each after a \($warmup) warm-up",
(if $addressing == "leader" then "addressing: leader (--leader-only): every order to the Raft leader, as phones reach the store by its name; every etcd put through the leader'"'"'s client"
 else "addressing: spread: orders round robin over the three nodes (followers forward to the leader); etcd callers round the members'"'"' clients" end),
"ratio = MasterOrder orders/s ÷ etcd puts/s; cpu ratio = MasterOrder µs/order ÷ etcd µs/put (both summed over the three processes)",
"",
"| callers, pair | etcd puts/s | p99 ms | µs/put per member | µs/put cluster | B/put cluster | MO orders/s | p99 ms | µs/order per node | µs/order cluster | B/order cluster | ratio | cpu ratio |",
"|---|---|---|---|---|---|---|---|---|---|---|---|---|",
(group_by(.callers)[] as $g |
  ($g[] | row("\(.callers), \(.pair)" + (if .ok then "" else " (replays or duplicates!)" end) + (if .mo.rejections > 0 then " (\(.mo.rejections) rejected)" else "" end);
              .etcd; .mo; ratio(.mo.rate; .etcd.rate); ratio(.mo.cpuSum; .etcd.cpuSum))),
  ( { rate: ($g|map(.etcd.rate)|median), p99: ($g|map(.etcd.p99)|median),
      cpu: [range(0; $g[0].etcd.cpu|length) as $i | $g|map(.etcd.cpu|sort|.[$i])|median],
      cpuSum: ($g|map(.etcd.cpuSum)|median), bytesSum: ($g|map(.etcd.bytesSum)|median) } as $e
  | { rate: ($g|map(.mo.rate)|median), p99: ($g|map(.mo.p99)|median),
      cpu: [range(0; $g[0].mo.cpu|length) as $i | $g|map(.mo.cpu|sort|.[$i])|median],
      cpuSum: ($g|map(.mo.cpuSum)|median), bytesSum: ($g|map(.mo.bytesSum)|median) } as $m
  | row("**\($g[0].callers), median**"; $e; $m; ($g|map(ratio(.mo.rate; .etcd.rate))|median); ($g|map(ratio(.mo.cpuSum; .etcd.cpuSum))|median))),
  ("| \($g[0].callers), ratio range | | | | | | | | | | | \($g|map(ratio(.mo.rate; .etcd.rate))|min|r(2))–\($g|map(ratio(.mo.rate; .etcd.rate))|max|r(2)) | \($g|map(ratio(.mo.cpuSum; .etcd.cpuSum))|min|r(2))–\($g|map(ratio(.mo.cpuSum; .etcd.cpuSum))|max|r(2)) |")
),
"",
"median rows: per member/node the medians of the lowest, middle and highest of each pair; every run'"'"'s reports are in \($out)"
' "$records"
