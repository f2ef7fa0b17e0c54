#!/usr/bin/env bash
# bench/mixedversion.sh: the mixed-version proof with a real old binary
# (issue 41). It builds `masterorder` from git REF (default d1458f3, the
# build before round nine) into a temporary directory, then runs
# update's TestMixedVersionStoreNeverDiverges with MO_OLD_BINARY set to
# it: three boxes start on REF's build, take a mixed guest and staff
# load, are restarted one at a time onto this working tree's build under
# that load, and after the load every box's FSM files (bbolt and SQLite,
# read from disk) must be the same, with no acknowledged order lost and
# none twice.
#
#   bench/mixedversion.sh [REF]        (env: GO_TEST_FLAGS, more go test flags)
#
# REF must be in this clone's history (a shallow clone may lack it: then
# `git fetch --unshallow` first). Exit status: the test's.
set -euo pipefail

ref=${1:-d1458f3}
case "$ref" in -h | --help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
repo=$(cd "$(dirname "$0")/.." && pwd)
export PATH="/usr/local/go/bin:$PATH"
command -v git >/dev/null && command -v tar >/dev/null || {
	apt-get update -qq >/dev/null
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq git tar >/dev/null
}

if ! commit=$(git -C "$repo" rev-parse --verify --quiet "$ref^{commit}"); then
	echo "mixedversion.sh: $ref is not a commit in the history of $repo" >&2
	if [ "$(git -C "$repo" rev-parse --is-shallow-repository 2>/dev/null)" = true ]; then
		echo "mixedversion.sh: this clone is shallow; 'git -C $repo fetch --unshallow' brings the history" >&2
	fi
	exit 2
fi
short=$(git -C "$repo" rev-parse --short=7 "$commit")

tmp=$(mktemp -d /tmp/mixedversion.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
echo "mixedversion.sh: building the old binary from $ref ($short) in $tmp" >&2
mkdir "$tmp/src"
git -C "$repo" archive "$commit" | tar -x -C "$tmp/src"
# A version that orders before this tree's test build (1.1.0) and says
# which commit it is.
(cd "$tmp/src" && go build -o "$tmp/masterorder-old" -ldflags "-X main.version=1.0.0-old-$short" .)
rm -rf "$tmp/src"

echo "mixedversion.sh: running the mixed-version test (old build $short, new build: $repo's working tree)" >&2
start=$(date +%s)
set +e
(cd "$repo" && MO_OLD_BINARY="$tmp/masterorder-old" go test -race -count=1 -v -timeout 30m ${GO_TEST_FLAGS:-} \
	-run '^TestMixedVersionStoreNeverDiverges$' ./update/)
rc=$?
set -e
echo "mixedversion.sh: $( [ $rc -eq 0 ] && echo PASS || echo FAIL ) in $(( $(date +%s) - start )) s (old $short, new $(git -C "$repo" rev-parse --short=7 HEAD)$(git -C "$repo" diff --quiet HEAD || echo '+changes'))" >&2
exit $rc
