package orders

import (
	"testing"

	"masterorder/raftfsm"
)

// The newest feature level switches on exactly this build's versions
// (commandVersions): a new version without a new level would never be
// proposed, a level above the table would be proposed and halt the
// proposer itself. Levels only ever allow more, never less.
func TestFeatureLevelsMatchTheTable(t *testing.T) {
	reg := raftfsm.NewRegistry()
	Register(reg)
	top := reg.BuildLevel()
	if int(top) != len(featureLevels) {
		t.Fatalf("build level %d, want %d (one per featureLevels entry)", top, len(featureLevels))
	}
	allowed := levelsOf(featureLevels)
	for ct := raftfsm.CommandType(32); ct != 0; ct++ {
		if !reg.Has(ct) {
			continue
		}
		if got, want := allowed(ct, top), versionOf(ct); got != want {
			t.Errorf("%s: the newest level %d allows version %d, the table's newest is %d: add a level for it (levels.go)", reg.Name(ct), top, got, want)
		}
		for l := uint32(2); l <= top; l++ {
			if allowed(ct, l) < allowed(ct, l-1) {
				t.Errorf("%s: level %d allows version %d, below level %d's %d", reg.Name(ct), l, allowed(ct, l), l-1, allowed(ct, l-1))
			}
		}
	}
}
