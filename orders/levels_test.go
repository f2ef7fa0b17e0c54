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

// levelOneTypes are the command types the builds before the feature level
// registered (frozen, like level 1 itself).
var levelOneTypes = map[raftfsm.CommandType]bool{
	32: true, 33: true, 34: true, 35: true, 36: true, 37: true, 38: true, 39: true, 40: true, 41: true,
	42: true, 43: true, 44: true, 45: true, 46: true, 60: true, 61: true, 62: true, 70: true, 71: true,
	72: true, 80: true, 81: true, 82: true, 83: true, 84: true, 90: true, 100: true, 101: true, 110: true,
}

// A command type added after level 1 is unknown to the builds before it,
// which halt on it: level 1 must list it at 0 (not proposed), and the
// level that introduces it at its version.
func TestNewCommandTypesAreGated(t *testing.T) {
	reg := raftfsm.NewRegistry()
	Register(reg)
	allowed := levelsOf(featureLevels)
	for ct := raftfsm.CommandType(32); ct != 0; ct++ {
		if reg.Has(ct) && !levelOneTypes[ct] && allowed(ct, 1) != 0 {
			t.Errorf("%s (%d) is newer than level 1 but level 1 allows version %d: list it at 0 in level 1 and at its version in a new level (levels.go)",
				reg.Name(ct), ct, allowed(ct, 1))
		}
	}
}
