package node

import (
	"errors"
	"io/fs"
	"syscall"
	"testing"

	"github.com/hashicorp/raft"

	"masterorder/raftfsm"
)

func TestDiskStateFloorsAndFailures(t *testing.T) {
	cfg := defaultDisk()
	const mb = 1 << 20
	const gb = 1 << 30
	enospc := &fs.PathError{Op: "write", Path: "raft.db", Err: syscall.ENOSPC}
	erofs := &fs.PathError{Op: "write", Path: "raft.db", Err: syscall.EROFS}
	for _, c := range []struct {
		name string
		in   diskInputs
		want string
	}{
		{"plenty", diskInputs{free: 10 * gb, total: 32 * gb, fsmBytes: 50 * mb}, DiskOK},
		// 32 GB: the low floor is 200 MB (smaller than 10 %), hard 64 MB.
		{"below the low floor", diskInputs{free: 150 * mb, total: 32 * gb, fsmBytes: 10 * mb}, DiskLow},
		{"a capture would cross the hard floor", diskInputs{free: 300 * mb, total: 32 * gb, fsmBytes: 250 * mb}, DiskLow},
		{"below the hard floor", diskInputs{free: 60 * mb, total: 32 * gb}, DiskFull},
		// 1 GB: 10 % (102 MB) and 2 % (20 MB) are the smaller floors.
		{"small card low", diskInputs{free: 90 * mb, total: gb}, DiskLow},
		{"small card full", diskInputs{free: 19 * mb, total: gb}, DiskFull},
		{"fsm paused for space", diskInputs{free: gb, total: 32 * gb, pause: &raftfsm.PausedError{Class: raftfsm.ClassFull}}, DiskFull},
		{"log write failed for space", diskInputs{free: gb, total: 32 * gb, appendErr: enospc}, DiskFull},
		{"fsm paused on an I/O error", diskInputs{free: gb, total: 32 * gb, pause: &raftfsm.PausedError{Class: raftfsm.ClassIO}}, DiskReadOnly},
		{"log write refused read-only", diskInputs{free: gb, total: 32 * gb, appendErr: erofs}, DiskReadOnly},
		{"statfs read-only", diskInputs{free: gb, total: 32 * gb, rdonly: true}, DiskReadOnly},
		{"slow writes", diskInputs{free: 10 * gb, total: 32 * gb, slow: true}, DiskSlow},
		{"full outranks slow", diskInputs{free: mb, total: 32 * gb, slow: true}, DiskFull},
	} {
		if got := diskState(c.in, cfg); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

// hashicorp/raft grants no vote it cannot persist: the guard refuses the
// vote's writes while the log cannot be written, and only those.
func TestVoteGuardRefusesVotesOnly(t *testing.T) {
	var refusing error
	g := voteGuard{StableStore: raft.NewInmemStore(), refuse: func() error { return refusing }}
	refusing = errors.New("log write failed")
	if err := g.SetUint64([]byte(keyLastVoteTerm), 3); err == nil {
		t.Fatal("vote term stored while the log cannot be written")
	}
	if err := g.Set([]byte(keyLastVoteCand), []byte("b")); err == nil {
		t.Fatal("vote candidate stored while the log cannot be written")
	}
	// The current term is never refused (raft panics without it).
	if err := g.SetUint64([]byte("CurrentTerm"), 3); err != nil {
		t.Fatal(err)
	}
	refusing = nil
	if err := g.SetUint64([]byte(keyLastVoteTerm), 3); err != nil {
		t.Fatal(err)
	}
	if v, _ := g.GetUint64([]byte(keyLastVoteTerm)); v != 3 {
		t.Fatalf("vote term %d after the log works again", v)
	}
}
