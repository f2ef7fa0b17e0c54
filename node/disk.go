package node

import (
	"errors"
	"sync"
	"time"

	"masterorder/raftfsm"
)

// The box's own card: free space, writes refused, writes slow. Each box
// watches its data directory (statfs every second), the FSM's pauses
// (raftfsm/pause.go) and its Raft log's writes, and sums them up as one
// state the status, /metrics and the console show:
//
//	ok        nothing to tell
//	low       below the low floor: backups are refused, and a snapshot
//	          capture is refused when its side copy would cross the hard
//	          floor (a capture copies the FSM files: it doubles their size
//	          on disk for a moment)
//	full      below the hard floor, or a write failed for lack of space:
//	          as the leader the box refuses writes (503 DISK_FULL) and
//	          hands the leadership on, before SQLite or bbolt fail
//	          mid-commit; the FSM pauses and catches up once there is room
//	readonly  the file system refuses writes (or an I/O error): the FSM
//	          pauses and retries; if it lasts disk.readonly_exit_after the
//	          process exits (status 1) so its unit or a reboot can act
//	slow      a Raft log write took longer than disk.slow_write within
//	          the last minute (a worn card stalls fsync)
//
// This file holds the state and how it is judged; disk_watch.go keeps it
// current and acts on it, disk_peers.go fetches the other members' cards,
// voteguard.go keeps a box whose log cannot be written from voting, and
// DiskConfig ([disk]) is in config.go, the card's gauges in metrics.go.

// Disk states.
const (
	DiskOK       = "ok"
	DiskLow      = "low"
	DiskFull     = "full"
	DiskReadOnly = "readonly"
	DiskSlow     = "slow"
)

var (
	// ErrDiskFull: this box, the leader, is below its hard floor and
	// takes no writes (503 DISK_FULL).
	ErrDiskFull = errors.New("this box's storage is full: it takes no writes")
	// ErrDiskLow: a backup is refused below the low floor.
	ErrDiskLow = errors.New("this box's storage is low: backups are refused until there is room")
)

// floor is the smaller of pct of total and mb.
func floor(total uint64, pct float64, mb int64) uint64 {
	return min(uint64(float64(total)*pct/100), uint64(mb)<<20)
}

// DiskStatus is one box's card as it reports it (the status's disk).
type DiskStatus struct {
	State      string    `json:"state"`
	FreeBytes  uint64    `json:"freeBytes"`
	TotalBytes uint64    `json:"totalBytes"`
	Since      time.Time `json:"since"`
}

// slowHold: how long one slow write marks the card slow.
const slowHold = time.Minute

type diskWatch struct {
	mu            sync.Mutex
	cur           DiskStatus
	free, total   uint64
	fsmBytes      int64
	rdonly        bool // statfs says read-only
	pause         *raftfsm.PausedError
	appendErr     error
	appendErrAt   time.Time
	lastSlow      time.Time
	readOnlySince time.Time
	lastHandOver  time.Time
	peers         map[string]peerReport
	wake          chan struct{}
}

// Disk is this box's card now.
func (n *Node) Disk() DiskStatus {
	n.disk.mu.Lock()
	defer n.disk.mu.Unlock()
	return n.disk.cur
}

// PeerDisk is a member's card as it last reported it (false: never).
func (n *Node) PeerDisk(id string) (DiskStatus, bool) {
	if id == n.cfg.NodeID {
		return n.Disk(), true
	}
	n.disk.mu.Lock()
	defer n.disk.mu.Unlock()
	d, ok := n.disk.peers[id]
	return d.DiskStatus, ok
}

// diskInputs is what the state is judged from.
type diskInputs struct {
	free, total uint64
	fsmBytes    int64
	rdonly      bool                 // statfs says read-only
	pause       *raftfsm.PausedError // the FSM waits out a failure
	appendErr   error                // a recent failed Raft log write
	slow        bool                 // a recent slow Raft log write
}

// diskState sums the inputs up as one state, the worst first.
func diskState(in diskInputs, cfg DiskConfig) string {
	hard := floor(in.total, cfg.HardFloorPercent, cfg.HardFloorMB)
	low := floor(in.total, cfg.LowFloorPercent, cfg.LowFloorMB)
	switch {
	case in.rdonly || (in.pause != nil && in.pause.Class != raftfsm.ClassFull) ||
		(in.appendErr != nil && raftfsm.Classify(in.appendErr) != raftfsm.ClassFull):
		return DiskReadOnly
	case in.free < hard || in.pause != nil || in.appendErr != nil:
		return DiskFull
	case in.slow:
		return DiskSlow
	case in.free < low || in.free < uint64(in.fsmBytes)+hard:
		// Low, or a capture's side copy would cross the hard floor.
		return DiskLow
	}
	return DiskOK
}
