#!/usr/bin/env bash
# Short, bounded fuzzing of everything a guest's request or a corrupt Raft
# entry can reach: the order decoder, the cart normalizer and fingerprint,
# the Idempotency-Key parser, the Raft command envelope, a whole FSM Apply
# with the real domain registry, an uploaded menu picture, and the config
# loader. Seeds are checked
# in under testdata/fuzz/<Target>/ next to each target (and run in every
# plain `go test`); a crash found here is written there as a new file.
#
#   FUZZTIME=1m .ci/fuzz.sh      # longer runs by hand
#
# By default each target runs a count of inputs, not a duration: Go 1.26's
# fuzz coordinator can fail a duration run at its deadline with "context
# deadline exceeded" and no crasher (go.dev/issue/75804, fixed in 1.27),
# and it did so here on a loaded machine. The counts are about what each
# target ran in 10 s on the 2-core dev machine.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

targets=(
  "./orders/admission FuzzDecodeOrder 100000x"
  "./orders/admission FuzzNormalizeFingerprint 40000x"
  "./orders/admission FuzzParseIdempotencyKey 100000x"
  "./orders/admission FuzzIDChecksMatchTheirPatterns 100000x"
  "./raftfsm FuzzCommandDecode 40000x"
  "./orders FuzzFSMApply 500x"
  "./orders FuzzPlaceOrderCodec 1000x"
  "./orders FuzzCachedResultCodec 5000x"
  "./orders/menuimage FuzzProcess 100000x"
  "./orders FuzzParseConfig 300x"
)
for t in "${targets[@]}"; do
  set -- $t
  budget="${FUZZTIME:-$3}"
  echo "== fuzz $2 ($1, $budget)"
  # A target that moved would fuzz nothing and pass: it must be there.
  listed=$(go test -list "^$2\$" "$1")
  grep -qx "$2" <<<"$listed" || { echo "fuzz target $2 not found in $1" >&2; exit 1; }
  # -fuzztime bounds the fuzzing; timeout bounds build + seeds + fuzzing.
  timeout 600 go test -run '^$' -fuzz "^$2\$" -fuzztime "$budget" "$1"
done
