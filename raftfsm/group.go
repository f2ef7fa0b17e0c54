package raftfsm

import (
	"database/sql"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// A group is the bbolt and SQLite transactions that hold the entries
// applied since the last commit. Committing once for many Raft batches
// (as etcd's backend does) is what makes the per-order cost small: a
// commit writes every dirty page, branch and meta page again, whether the
// batch held one order or a hundred.
//
// Applied but uncommitted entries are invisible: Applied, the listeners
// and every local read move only at the commit (the FSM clock, Now, moves
// with each batch). Nothing is lost by a crash before it: the entries are
// in the Raft log, the files say the last index they hold, and the node
// applies the rest again at start (needRestore in node). A reader that
// waits for an index the group holds commits it at once (WaitApplied), so
// read-your-writes costs no delay.
type group struct {
	btx    *bolt.Tx
	stx    *sql.Tx
	db     *cachedTx
	last   uint64 // the newest index in the group
	now    int64
	wall   int64
	events []Event
	n      int    // entries applied into it
	gen    uint64 // tells the flush timer which group it was armed for
	armed  bool   // its flush timer runs
}

// Grouping says when a group is committed.
type Grouping struct {
	// Delay is how long a group may stay open after its first batch; 0
	// commits every batch (the default, and what tests that read the
	// files right after ApplyBatch rely on).
	Delay time.Duration
	// Entries commits a group that holds this many entries (0: 1024).
	Entries int
	// Immediate writes every row and value Apply queues (QueueInsert,
	// QueueSet, bulk.go) at once, one statement per call: what tests
	// compare the queue with.
	Immediate bool
}

func (g Grouping) entries() int {
	if g.Entries <= 0 {
		return 1024
	}
	return g.Entries
}

// openGroupLocked returns the open group, or begins one.
func (f *FSM) openGroupLocked() (*group, error) {
	if f.grp != nil {
		return f.grp, nil
	}
	btx, err := f.bolt.Begin(true)
	if err != nil {
		return nil, fmt.Errorf("begin bolt tx: %w", err)
	}
	stx, err := f.sqlW.Begin()
	if err != nil {
		btx.Rollback()
		return nil, fmt.Errorf("begin sqlite tx: %w", err)
	}
	f.state.Lock()
	last, now, wall := f.applied, f.now, f.wall
	f.state.Unlock()
	f.grpGen++
	f.grp = &group{btx: btx, stx: stx, db: newCachedTx(stx, f.stmtW, f.bulk), last: last, now: now, wall: wall, gen: f.grpGen}
	return f.grp, nil
}

// abortGroupLocked drops the open group's writes (a failed batch, a
// restore replacing the files): the log still holds its entries.
func (f *FSM) abortGroupLocked() {
	g := f.grp
	if g == nil {
		return
	}
	f.grp = nil
	f.pendingLast.Store(0)
	f.bulk.dropAll() // the queued rows go with the group
	g.stx.Rollback()
	g.btx.Rollback()
	f.stmtW.prepareWanted()
	// Handlers' memory may hold the dropped writes.
	f.newEpoch()
}

// commitGroupLocked commits the open group and makes it visible: the
// applied index, FSM time, waiters and listeners move together.
func (f *FSM) commitGroupLocked() error {
	g := f.grp
	if g == nil {
		return nil
	}
	f.grp = nil
	f.pendingLast.Store(0)
	err := f.commitFiles(g)
	f.commits.Add(1)
	// The writer's connection is free again: prepare what the group met
	// for the first time.
	f.stmtW.prepareWanted()
	if err != nil {
		f.newEpoch() // the files may not hold what was applied
		f.failLocked(err, g.last)
		return err
	}
	f.state.Lock()
	f.setClockLocked(g)
	if g.last > f.applied {
		f.applied = g.last
		close(f.advance)
		f.advance = make(chan struct{})
	}
	f.state.Unlock()
	if len(g.events) > 0 {
		f.listenMu.RLock()
		if f.listener != nil {
			f.listener(g.events)
		}
		f.listenMu.RUnlock()
	}
	return nil
}

// commitFiles stores the group's last index in both files and commits
// them, SQLite first: if we die between the commits, SQLite is ahead and
// Consistent() sends the node through a rebuild.
func (f *FSM) commitFiles(g *group) error {
	defer g.btx.Rollback() // no-op after Commit
	defer g.stx.Rollback()
	defer f.bulk.dropAll() // no-op after a flush; a failed one leaves rows
	// The rows Apply queued (bulk.go) go in the same transaction.
	if err := g.db.flushAll(); err != nil {
		return err
	}
	meta := g.btx.Bucket(metaBucket)
	if err := putU64(meta, keyApplied, g.last); err != nil {
		return err
	}
	if err := putU64(meta, keyNow, uint64(g.now)); err != nil {
		return err
	}
	if err := putU64(meta, keyWall, uint64(g.wall)); err != nil {
		return err
	}
	if _, err := g.db.Exec(`INSERT INTO _fsm_meta(k,v) VALUES('applied',?) ON CONFLICT(k) DO UPDATE SET v=excluded.v`, int64(g.last)); err != nil {
		return fmt.Errorf("store sqlite applied index: %w", err)
	}
	if err := g.stx.Commit(); err != nil {
		return fmt.Errorf("commit sqlite: %w", err)
	}
	if err := g.btx.Commit(); err != nil {
		// SQLite holds the group, bbolt does not: the files disagree.
		return &tornCommit{err}
	}
	return nil
}

// settleGroupLocked commits the group after a batch when it is due (no
// grouping, full, or someone waits for it), or leaves it open with a timer
// that commits it after Delay.
func (f *FSM) settleGroupLocked() error {
	g := f.grp
	if g == nil {
		return nil
	}
	if g.n == 0 {
		// Only skipped or already applied entries: nothing to store.
		f.abortGroupLocked()
		return nil
	}
	if f.grouping.Delay <= 0 || g.n >= f.grouping.entries() || f.waiters.Load() > 0 {
		return f.commitGroupLocked()
	}
	f.pendingLast.Store(g.last)
	// The FSM clock moves with every batch, not only at commits: a new
	// leader starts its clock from it (node's FSMNow), and TTLs judged on
	// an older reading would stretch.
	f.state.Lock()
	f.setClockLocked(g)
	f.state.Unlock()
	if !g.armed {
		g.armed = true
		gen := g.gen
		time.AfterFunc(f.grouping.Delay, func() { f.flushTimer(gen) })
	}
	return nil
}

// setClockLocked moves the FSM clock to the group's (f.state held).
// The estimate it gives (NowAt: now + time since at) never goes back: a
// command stamped long before it is applied (proposed by a leader that
// then stopped, committed by the next one after the election) carries an
// FSM time below what this box had already counted to, and taking its
// stamp as of now would stretch every TTL by the election, on this box
// and, through FSMNow, on a new leader's clock started from it.
func (f *FSM) setClockLocked(g *group) {
	if g.now != f.now {
		at := time.Now()
		if f.now != 0 {
			if ahead := f.now + at.Sub(f.nowAt).Milliseconds() - g.now; ahead > 0 {
				at = at.Add(-time.Duration(ahead) * time.Millisecond)
			}
		}
		f.nowAt = at
	}
	if g.wall != f.wall {
		f.wallAt = time.Now()
	}
	f.now, f.wall = g.now, g.wall
}

// flushTimer commits the group it was armed for, if still open (a group
// committed earlier leaves its timer nothing to do; the next one has its
// own).
func (f *FSM) flushTimer(gen uint64) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	f.applyMu.Lock()
	defer f.applyMu.Unlock()
	if f.closed || f.grp == nil || f.grp.gen != gen {
		return
	}
	f.commitGroupLocked()
}

// Flush commits the entries applied but not yet committed, so that Applied
// and local reads reflect everything ApplyBatch returned.
func (f *FSM) Flush() error {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.closed {
		return nil
	}
	f.applyMu.Lock()
	defer f.applyMu.Unlock()
	return f.commitGroupLocked()
}

// Handled is the newest index ApplyBatch has applied, committed to the
// files or still in the open group: what "caught up with the log" means.
func (f *FSM) Handled() uint64 {
	return max(f.Applied(), f.pendingLast.Load())
}

// Commits counts the commits of the FSM files since Open (a metric: with
// grouping there are far fewer than batches).
func (f *FSM) Commits() uint64 { return f.commits.Load() }
