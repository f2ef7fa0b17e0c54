package orders

import "masterorder/raftfsm"

// RegisterV1 registers the dispatch table of the build before version 2
// of any command (every handler at version 1): an old box in a rolling
// upgrade.
func RegisterV1(reg *raftfsm.Registry) {
	register(reg, func(raftfsm.CommandType) uint8 { return 1 })
}
