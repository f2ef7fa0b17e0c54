package raftfsm_test

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/raft"

	"masterorder/raftfsm"
)

func levelEntry(index uint64, level uint32) *raft.Log {
	return entry(index, raftfsm.Command{Type: raftfsm.CmdFeatureLevel, Version: 1, FSMTime: int64(1000 + index), Payload: raftfsm.EncodeFeatureLevel(level)})
}

// levelRegistry is a build at level 2 whose cmdSet has versions 1..3:
// level 1 allows version 1, level 2 version 2 (3 is applied, never
// proposed by this build: a table newer than its levels).
func levelRegistry() *raftfsm.Registry {
	reg := testRegistry()
	reg.RegisterVersions(cmdNew, "test.new", 3, func(*raftfsm.ApplyContext, []byte) ([]byte, error) { return nil, nil })
	reg.SetFeatureLevels(2, func(t raftfsm.CommandType, level uint32) uint8 {
		if t == cmdNew {
			return uint8(level)
		}
		return 1
	})
	return reg
}

// The level is a replicated number that only goes up: a raise above the
// current one stores it, one below or equal changes nothing, a malformed
// one is answered (never a halt). Proposers see what it allows at once,
// and it survives reopening the files and a snapshot restore.
func TestFeatureLevelRaisesNeverLowersAndSurvives(t *testing.T) {
	dir := t.TempDir()
	f, err := raftfsm.Open(raftfsm.Options{Dir: dir, Registry: levelRegistry(), Migrate: migrate})
	if err != nil {
		t.Fatal(err)
	}
	if f.FeatureLevel() != 0 || f.BuildLevel() != 2 {
		t.Fatalf("new store: level %d build %d, want 0 and 2", f.FeatureLevel(), f.BuildLevel())
	}
	// Level 0 (a store from before the gate) allows what level 1 allows.
	if v := f.ProposableVersion(cmdNew); v != 1 {
		t.Fatalf("level 0 proposes version %d, want 1", v)
	}
	steps := []struct {
		raise, want uint32
	}{{1, 1}, {2, 2}, {1, 2}, {0, 2}, {2, 2}, {7, 7}}
	for i, s := range steps {
		r := resp(t, f.Apply(levelEntry(uint64(i+1), s.raise)))
		if r.Err != nil || string(r.Data) != strconvU(s.want) {
			t.Fatalf("raise to %d: %q %v, want level %d", s.raise, r.Data, r.Err, s.want)
		}
		if f.FeatureLevel() != s.want {
			t.Fatalf("after raise to %d the level is %d, want %d", s.raise, f.FeatureLevel(), s.want)
		}
	}
	// A level above the build's (a box rolled back after the raise)
	// proposes the build's newest level's versions, never its table's 3.
	if v := f.ProposableVersion(cmdNew); v != 2 {
		t.Fatalf("level 7 on a level-2 build proposes version %d, want 2", v)
	}
	bad := resp(t, f.Apply(entry(7, raftfsm.Command{Type: raftfsm.CmdFeatureLevel, Version: 1, Payload: []byte{1}})))
	if bad.Err != nil || !strings.Contains(string(bad.Data), "malformed") || f.Halted() != nil {
		t.Fatalf("malformed raise: %q %v, halted %v", bad.Data, bad.Err, f.Halted())
	}
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	var snap bytes.Buffer
	if err := f.WriteSnapshot(&snap); err != nil {
		t.Fatal(err)
	}
	f.Close()

	// Reopened: the level is read back from the files.
	f, err = raftfsm.Open(raftfsm.Options{Dir: dir, Registry: levelRegistry(), Migrate: migrate})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.FeatureLevel() != 7 {
		t.Fatalf("reopened level %d, want 7", f.FeatureLevel())
	}
	// Restored from a snapshot onto a fresh store, and back to 0 on Reset.
	g := openFSM(t, t.TempDir())
	if err := g.Restore(ioNopCloser{bytes.NewReader(snap.Bytes())}); err != nil {
		t.Fatal(err)
	}
	if g.FeatureLevel() != 7 {
		t.Fatalf("restored level %d, want 7", g.FeatureLevel())
	}
	if err := g.Reset(); err != nil {
		t.Fatal(err)
	}
	if g.FeatureLevel() != 0 {
		t.Fatalf("level after Reset %d, want 0 (rebuilt from snapshot and log)", g.FeatureLevel())
	}
}

// Without SetFeatureLevels a build is at level 1 and proposes its table's
// newest versions (a cluster of one build, the node package's tests).
func TestNoFeatureLevelsProposeTheTable(t *testing.T) {
	reg := testRegistry()
	reg.RegisterVersions(cmdNew, "test.new", 3, func(*raftfsm.ApplyContext, []byte) ([]byte, error) { return nil, nil })
	f, err := raftfsm.Open(raftfsm.Options{Dir: t.TempDir(), Registry: reg, Migrate: migrate})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.BuildLevel() != 1 || f.ProposableVersion(cmdNew) != 3 || f.ProposableVersion(cmdFail+100) != 0 {
		t.Fatalf("build level %d, proposable %d/%d; want 1, 3 and 0 (unknown type)", f.BuildLevel(), f.ProposableVersion(cmdNew), f.ProposableVersion(cmdFail+100))
	}
	if !reg.Has(raftfsm.CmdFeatureLevel) {
		t.Fatal("a new registry does not hold the feature level command")
	}
}

func strconvU(v uint32) string { return strconv.FormatUint(uint64(v), 10) }
