package node

import (
	"fmt"
	"syscall"
	"time"

	"github.com/hashicorp/raft"

	"masterorder/raftfsm"
)

// statDisk reads free and total bytes and the read-only flag of dir's
// file system.
func statDisk(dir string) (free, total uint64, rdonly bool, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, 0, false, fmt.Errorf("statfs %s: %w", dir, err)
	}
	bs := uint64(st.Bsize)
	const stRdonly = 1 // ST_RDONLY
	return st.Bavail * bs, st.Blocks * bs, uint64(st.Flags)&stRdonly != 0, nil
}

// refreshDisk recomputes the state; it returns it.
func (n *Node) refreshDisk(now time.Time) DiskStatus {
	free, total, rdonly, err := statDisk(n.cfg.DataDir)
	fsmBytes := n.fsm.FilesBytes()
	pause := n.fsm.Paused()
	d := &n.disk
	d.mu.Lock()
	defer d.mu.Unlock()
	if err == nil {
		d.free, d.total, d.rdonly = free, total, rdonly
	}
	d.fsmBytes = fsmBytes
	d.pause = pause
	cfg := n.cfg.Disk
	hard := floor(d.total, cfg.HardFloorPercent, cfg.HardFloorMB)
	low := floor(d.total, cfg.LowFloorPercent, cfg.LowFloorMB)
	in := diskInputs{free: d.free, total: d.total, fsmBytes: fsmBytes, rdonly: d.rdonly, pause: pause,
		slow: !d.lastSlow.IsZero() && now.Sub(d.lastSlow) < slowHold}
	if d.appendErr != nil && now.Sub(d.appendErrAt) < appendFailHold {
		in.appendErr = d.appendErr
	}
	state := diskState(in, cfg)
	if state != d.cur.State {
		if d.cur.State != "" || state != DiskOK {
			n.log.Warn("storage state changed", "from", d.cur.State, "to", state, "freeBytes", d.free, "totalBytes", d.total,
				"hardFloor", hard, "lowFloor", low, "fsmBytes", fsmBytes)
		}
		d.cur.Since = now.UTC()
	}
	if state == DiskReadOnly {
		if d.readOnlySince.IsZero() {
			d.readOnlySince = now
		}
	} else {
		d.readOnlySince = time.Time{}
	}
	d.cur.State, d.cur.FreeBytes, d.cur.TotalBytes = state, d.free, d.total
	return d.cur
}

// watchDisk refreshes the state every second (and at once when the FSM
// pauses or resumes), hands the leadership on while full, and exits the
// process when a read-only card outlasts disk.readonly_exit_after.
func (n *Node) watchDisk() {
	defer n.wg.Done()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	var peersAsked time.Time
	for {
		now := time.Now()
		s := n.refreshDisk(now)
		if now.Sub(peersAsked) >= peerDiskEvery {
			peersAsked = now
			n.wg.Add(1)
			go n.fetchPeerDisks()
		}
		if s.State == DiskFull || s.State == DiskReadOnly {
			n.handOverForDisk(now)
		}
		n.disk.mu.Lock()
		since := n.disk.readOnlySince
		n.disk.mu.Unlock()
		if after := n.cfg.Disk.ReadOnlyExitAfter.Duration; after > 0 && !since.IsZero() && now.Sub(since) > after {
			n.fail(fmt.Errorf("the memory card has refused writes for %v and the box cannot recover in place: exiting so that the unit (or a reboot with a file system check) can act", now.Sub(since).Round(time.Second)))
			return
		}
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
		case <-n.disk.wake:
		}
	}
}

// handOverForDisk gives up the leadership of a box whose card is full or
// read-only, at most every 30 s (all boxes full: nobody better to take it).
func (n *Node) handOverForDisk(now time.Time) {
	if n.raft == nil || n.raft.State() != raft.Leader {
		return
	}
	n.disk.mu.Lock()
	if now.Sub(n.disk.lastHandOver) < 30*time.Second {
		n.disk.mu.Unlock()
		return
	}
	n.disk.lastHandOver = now
	n.disk.mu.Unlock()
	if !n.steppingDown.CompareAndSwap(false, true) {
		return
	}
	n.log.Warn("storage full or read-only on the leader: handing the leadership to another member", "disk", n.Disk().State)
	go func() {
		defer n.steppingDown.Store(false)
		if err := n.raft.LeadershipTransfer().Error(); err != nil {
			n.log.Warn("leadership transfer for storage", "error", err)
		}
	}()
}

// wakeDisk asks watchDisk for a refresh now.
func (n *Node) wakeDisk() {
	select {
	case n.disk.wake <- struct{}{}:
	default:
	}
}

// onFSMPause is the FSM's pause listener: the state changes at once, and
// a leader hands over (a paused FSM answers nothing).
func (n *Node) onFSMPause(p *raftfsm.PausedError) {
	n.wakeDisk()
	// Raft replays entries before NewRaft returns: n.raft may not be set.
	if p != nil && n.raftRef.Load() != nil {
		n.stepDownIfHalted()
	}
}

// diskRefusesWrites: as the leader this box takes no writes (hard floor).
func (n *Node) diskRefusesWrites() bool {
	s := n.Disk().State
	return s == DiskFull || s == DiskReadOnly
}

// noteLogWrite records one write of the Raft log: how long it took and
// whether it failed.
func (n *Node) noteLogWrite(took time.Duration, err error) {
	d := &n.disk
	d.mu.Lock()
	defer d.mu.Unlock()
	now := time.Now()
	if err != nil {
		first := d.appendErr == nil
		d.appendErr, d.appendErrAt = err, now
		if first {
			n.log.Error("raft log write failed: this box does not vote until a write works", "error", err)
			go n.wakeDisk()
		}
		return
	}
	if d.appendErr != nil {
		n.log.Info("raft log writes work again")
		d.appendErr = nil
		go n.wakeDisk()
	}
	if took > n.cfg.Disk.SlowWrite.Duration {
		d.lastSlow = now
	}
}

// captureGate refuses a capture whose side copy would take the free space
// below the hard floor (it holds as much again as the FSM files).
func (n *Node) captureGate(fsmBytes int64) error {
	d := &n.disk
	d.mu.Lock()
	defer d.mu.Unlock()
	hard := floor(d.total, n.cfg.Disk.HardFloorPercent, n.cfg.Disk.HardFloorMB)
	if d.total > 0 && d.free < uint64(fsmBytes)+hard {
		return fmt.Errorf("%w: a copy of the %d-byte replica would leave less than the hard floor (%d bytes free)", ErrDiskLow, fsmBytes, d.free)
	}
	return nil
}
