package raftfsm_test

import (
	"bytes"
	"io"
	"testing"

	"masterorder/raftfsm"
)

const cmdEpoch raftfsm.CommandType = 44

// The epoch a handler sees stays while entries are applied in order and
// moves whenever the files change otherwise (reset, snapshot restore,
// reopening): a domain's memory of the files is stale then. OnApplied
// hears of every applied command, of any type.
func TestEpochMovesOnlyWhenTheFilesChangeOutsideApply(t *testing.T) {
	var seen []uint64
	var heard []raftfsm.CommandType
	reg := testRegistry()
	reg.Register(cmdEpoch, "test.epoch", func(ctx *raftfsm.ApplyContext, p []byte) ([]byte, error) {
		seen = append(seen, ctx.Epoch)
		return nil, nil
	})
	reg.OnApplied(func(ctx *raftfsm.ApplyContext, ct raftfsm.CommandType) { heard = append(heard, ct) })
	dir := t.TempDir()
	open := func() *raftfsm.FSM {
		f, err := raftfsm.Open(raftfsm.Options{Dir: dir, Registry: reg, Migrate: migrate})
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	f := open()
	idx := uint64(0)
	epoch := func() uint64 {
		t.Helper()
		idx++
		resp(t, f.Apply(entry(idx, raftfsm.Command{Type: cmdEpoch, Version: 1, FSMTime: int64(idx)})))
		return seen[len(seen)-1]
	}
	e1 := epoch()
	idx++
	resp(t, f.Apply(setEntry(idx, int64(idx), "k", "v")))
	if e := epoch(); e != e1 {
		t.Fatalf("epoch moved from %d to %d with entries applied in order", e1, e)
	}
	if want := []raftfsm.CommandType{cmdEpoch, cmdSet, cmdEpoch}; !equalTypes(heard, want) {
		t.Fatalf("OnApplied heard %v, want %v", heard, want)
	}
	var snap bytes.Buffer
	if err := f.WriteSnapshot(&snap); err != nil {
		t.Fatal(err)
	}
	if err := f.Restore(io.NopCloser(bytes.NewReader(snap.Bytes()))); err != nil {
		t.Fatal(err)
	}
	e2 := epoch()
	if e2 == e1 {
		t.Fatal("a snapshot restore kept the epoch")
	}
	if err := f.Reset(); err != nil {
		t.Fatal(err)
	}
	idx = 0
	e3 := epoch()
	if e3 == e2 || e3 == e1 {
		t.Fatal("a reset kept an epoch")
	}
	f.Close()
	f = open()
	defer f.Close()
	if e4 := epoch(); e4 == e3 || e4 == e2 || e4 == e1 {
		t.Fatal("reopening the files, with the same registry, kept an epoch")
	}
}

func equalTypes(a, b []raftfsm.CommandType) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
