package orders

import (
	"time"

	"masterorder/raftfsm"
)

// RegisterV1 registers the dispatch table of the build before version 2
// of any command (every handler at version 1): an old box in a rolling
// upgrade.
func RegisterV1(reg *raftfsm.Registry) {
	registerTable(commandTable{reg, func(raftfsm.CommandType) uint8 { return 1 }})
}

// SetPrintIO shortens the printer I/O bounds for fault tests.
func SetPrintIO(dial, io time.Duration) func() {
	d, i := printDialTimeout, printIOTimeout
	printDialTimeout, printIOTimeout = dial, io
	return func() { printDialTimeout, printIOTimeout = d, i }
}
