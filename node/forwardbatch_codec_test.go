package node

import (
	"errors"
	"fmt"
	"testing"

	"masterorder/raftfsm"
)

// Every kind of answer reads back as written, a known error keeps its
// identity across the wire, and an answer cut short is not read as one.
func TestBatchAnswersReadBackAsWritten(t *testing.T) {
	cases := []struct {
		out  []byte
		err  error
		kind byte
		is   error
	}{
		{[]byte(`{"ok":true}`), nil, batchOK, nil},
		{nil, nil, batchOK, nil},
		{[]byte(`{"partial":1}`), fmt.Errorf("apply: %w", raftfsm.ErrUnknownCommand), batchErr, raftfsm.ErrUnknownCommand},
		{nil, errors.New("a domain error"), batchErr, nil},
		{[]byte("dropped"), fmt.Errorf("%w: leader not ready", errRetry), batchRetry, nil},
		{[]byte("dropped"), fmt.Errorf("%w: lost leadership", ErrUnknownOutcome), batchUnknown, nil},
	}
	var wire []byte
	for _, c := range cases {
		wire = appendBatchAnswer(wire, c.out, c.err)
	}
	rest := wire
	for i, c := range cases {
		kind, out, code, msg, r, ok := readBatchAnswer(rest)
		if !ok {
			t.Fatalf("answer %d not read", i)
		}
		rest = r
		if kind != c.kind {
			t.Errorf("answer %d: kind %d, want %d", i, kind, c.kind)
		}
		if c.kind == batchOK || c.kind == batchErr {
			if string(out) != string(c.out) {
				t.Errorf("answer %d: result %q, want %q", i, out, c.out)
			}
		} else if len(out) != 0 {
			t.Errorf("answer %d: a retry or unknown outcome carried a result %q", i, out)
		}
		if c.err != nil && msg != c.err.Error() {
			t.Errorf("answer %d: message %q, want %q", i, msg, c.err.Error())
		}
		if c.is != nil && !errors.Is(forwardedError(code, msg), c.is) {
			t.Errorf("answer %d: code %q does not name %v", i, code, c.is)
		}
	}
	if len(rest) != 0 {
		t.Errorf("%d bytes left after the last answer", len(rest))
	}
	for cut := 0; cut < len(wire); cut++ {
		data, read := wire[:cut], 0
		for {
			_, _, _, _, r, ok := readBatchAnswer(data)
			if !ok {
				break
			}
			data, read = r, read+1
		}
		if read >= len(cases) {
			t.Fatalf("cut at %d of %d bytes: all %d answers read", cut, len(wire), read)
		}
	}
}
