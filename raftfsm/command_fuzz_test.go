package raftfsm_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"masterorder/raftfsm"
)

// FuzzCommandDecode: Decode never panics; what it rejects wraps
// ErrBadCommand; what it accepts re-encodes to exactly the same bytes, so
// every node reads a log entry the same way. Seeds: testdata/fuzz.
func FuzzCommandDecode(f *testing.F) {
	for _, c := range []raftfsm.Command{
		{Type: 1, Version: 1, FSMTime: 5, Payload: []byte(`{"op":"put","key":"k"}`)},
		{Type: 2, Version: 1, FSMTime: 1_700_000_000_000, WallTime: 1_700_000_000_000, Payload: []byte(`{"limit":1000}`)},
		{Type: 35, Version: 1, FSMTime: 1, Payload: []byte(`{"sessionId":"s","items":[]}`)},
		{Type: 200, Version: 9, Flags: raftfsm.FlagIgnorable, FSMTime: 1<<63 - 1, WallTime: -1},
	} {
		f.Add(c.Encode())
	}
	f.Add([]byte{})
	f.Add([]byte{1})
	f.Add(make([]byte, 20))
	neg := raftfsm.Command{Type: 1, Version: 1}.Encode()
	binary.BigEndian.PutUint64(neg[4:], 1<<63)
	f.Add(neg)
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := raftfsm.Decode(b)
		if err != nil {
			if !errors.Is(err, raftfsm.ErrBadCommand) {
				t.Fatalf("Decode(%x) error %v does not wrap ErrBadCommand", b, err)
			}
			return
		}
		if c.FSMTime < 0 {
			t.Fatalf("accepted negative FSM time %d", c.FSMTime)
		}
		if got := c.Encode(); !bytes.Equal(got, b) {
			t.Fatalf("Encode(Decode(b)) != b:\n%x\n%x", got, b)
		}
	})
}
