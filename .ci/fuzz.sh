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
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
FUZZTIME="${FUZZTIME:-10s}"

targets=(
  "./orders/admission FuzzDecodeOrder"
  "./orders/admission FuzzNormalizeFingerprint"
  "./orders/admission FuzzParseIdempotencyKey"
  "./orders/admission FuzzIDChecksMatchTheirPatterns"
  "./raftfsm FuzzCommandDecode"
  "./orders FuzzFSMApply"
  "./orders FuzzPlaceOrderCodec"
  "./orders FuzzCachedResultCodec"
  "./orders/menuimage FuzzProcess"
  "./orders FuzzParseConfig"
)
for t in "${targets[@]}"; do
  set -- $t
  echo "== fuzz $2 ($1, $FUZZTIME)"
  # A target that moved would fuzz nothing and pass: it must be there.
  listed=$(go test -list "^$2\$" "$1")
  grep -qx "$2" <<<"$listed" || { echo "fuzz target $2 not found in $1" >&2; exit 1; }
  # -fuzztime bounds the fuzzing; timeout bounds build + seeds + fuzzing.
  timeout 600 go test -run '^$' -fuzz "^$2\$" -fuzztime "$FUZZTIME" "$1"
done
