package orders

import (
	"maps"

	"masterorder/raftfsm"
)

// featureLevels[L-1] is what the cluster's feature level L lets a box
// propose: the newest version of each command type (absent: version 1; 0:
// a type not proposed yet at that level). The level is raised by the
// leader only when every box runs a build that knows it (raftfsm/level.go,
// node/featurelevel.go), so a box rolled back to the previous build during
// a rolling update still applies everything the others propose.
//
// A level is never edited once released. A build that adds a command
// version (commandVersions) or a command type appends a level with what
// it changes; the newest level allows exactly commandVersions (levels_test.go).
var featureLevels = cumulative(
	// Level 1 is exactly what the builds before the gate proposed, so a
	// store that has no level yet (0, which allows what level 1 allows) is
	// safe in mixed versions from the first day.
	map[raftfsm.CommandType]uint8{
		CmdSetStock: 2, CmdPlaceOrder: 5, CmdSetOrderStatus: 2, CmdCheckoutBegin: 2,
		CmdCheckoutCancel: 2, CmdCheckout: 3, CmdForceRelease: 2, CmdReprint: 2,
		CmdUpsertMenu: 2, CmdCloudState: 2,
		CmdShopTimeZone: 0, CmdSetClock: 0,
	},
	// Level 2: the store's time zone set from the console (timezone.go)
	// and a manager's clock (clock.go).
	map[raftfsm.CommandType]uint8{CmdShopTimeZone: 1, CmdSetClock: 1},
	// Level 3: a guest's cooldown and burst window as a record named by
	// its order's index, and their release (placeOrder 6, forceRelease 3;
	// windowrecords.go).
	map[raftfsm.CommandType]uint8{CmdPlaceOrder: 6, CmdForceRelease: 3},
)

// cumulative makes each level from the one before it and what it changes.
func cumulative(changes ...map[raftfsm.CommandType]uint8) []map[raftfsm.CommandType]uint8 {
	levels := make([]map[raftfsm.CommandType]uint8, len(changes))
	for i, c := range changes {
		levels[i] = map[raftfsm.CommandType]uint8{}
		if i > 0 {
			maps.Copy(levels[i], levels[i-1])
		}
		maps.Copy(levels[i], c)
	}
	return levels
}

// levelsOf is the raftfsm.LevelTable of a list of levels.
func levelsOf(levels []map[raftfsm.CommandType]uint8) raftfsm.LevelTable {
	return func(t raftfsm.CommandType, level uint32) uint8 {
		if v, ok := levels[level-1][t]; ok {
			return v
		}
		return 1
	}
}

// registerLevels declares this build's feature levels (Register).
func registerLevels(reg *raftfsm.Registry, levels []map[raftfsm.CommandType]uint8) {
	reg.SetFeatureLevels(uint32(len(levels)), levelsOf(levels))
}
