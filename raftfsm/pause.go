package raftfsm

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/raft"
)

// A full card is a pause, not a halt. When a write of the FSM files fails
// for a reason Classify does not call a halt, the open group is dropped
// (the files stay at the last committed group), ApplyBatch stops applying
// and only notes the newest index Raft handed over (owed), and a
// goroutine retries with backoff: it reopens the files through the repair
// path when they may disagree (ClassIO), restores the newest local
// snapshot when what the files hold no longer joins the log, applies
// every entry up to owed from the Raft log and commits, and only then
// lets ApplyBatch apply again. Nothing is lost meanwhile: the entries are
// in the Raft log, and the log is not compacted past them because a
// paused FSM refuses snapshots (Capture).

// ErrPaused is what a paused FSM answers (errors.Is also matches
// ErrHalted, so everything that refuses a halted node refuses it too).
var ErrPaused = errors.New("state machine paused")

// PausedError says why the FSM pauses and since when.
type PausedError struct {
	Class Class
	Err   error
	Since time.Time
}

func (e *PausedError) Error() string {
	return fmt.Sprintf("state machine paused (%s, retrying): %v", e.Class, e.Err)
}

// Is makes a pause count as ErrPaused and as ErrHalted.
func (e *PausedError) Is(target error) bool { return target == ErrPaused || target == ErrHalted }

func (e *PausedError) Unwrap() error { return e.Err }

// Source is where a paused FSM finds what it missed: the node's Raft log
// and its newest snapshot.
type Source interface {
	GetLog(index uint64, l *raft.Log) error
	// LatestSnapshot opens the newest local snapshot (rc nil: none).
	LatestSnapshot() (index uint64, rc io.ReadCloser, err error)
}

// Backoff of the retries while paused.
const (
	resumeBackoffMin = 100 * time.Millisecond
	resumeBackoffMax = 5 * time.Second
	// resumeChunk entries are applied per commit while catching up.
	resumeChunk = 256
)

// SetSource installs where a paused FSM catches up from. Without one a
// storage failure halts the FSM (nothing to catch up from).
func (f *FSM) SetSource(s Source) {
	f.listenMu.Lock()
	f.source = s
	f.listenMu.Unlock()
}

// SetCaptureGate installs fn, asked before every capture with the size of
// the FSM files (a capture copies them): an error refuses the capture.
func (f *FSM) SetCaptureGate(fn func(fsmBytes int64) error) {
	f.listenMu.Lock()
	f.captureGate = fn
	f.listenMu.Unlock()
}

// FilesBytes is the size of the FSM files on disk.
func (f *FSM) FilesBytes() int64 {
	var sum int64
	for _, name := range []string{boltFile, sqliteFile, sqliteFile + "-wal"} {
		if st, err := os.Stat(filepath.Join(f.dir, name)); err == nil {
			sum += st.Size()
		}
	}
	return sum
}

// SetPauseListener installs fn, told when the FSM pauses (and again when
// the reason changes) and, with nil, when it resumed. It must not block.
func (f *FSM) SetPauseListener(fn func(*PausedError)) {
	f.listenMu.Lock()
	f.onPause = fn
	f.listenMu.Unlock()
}

func (f *FSM) notifyPause(p *PausedError) {
	f.listenMu.RLock()
	fn := f.onPause
	f.listenMu.RUnlock()
	if fn != nil {
		fn(p)
	}
}

func (f *FSM) getSource() Source {
	f.listenMu.RLock()
	defer f.listenMu.RUnlock()
	return f.source
}

// Paused returns the current pause, or nil.
func (f *FSM) Paused() *PausedError {
	f.state.Lock()
	defer f.state.Unlock()
	return f.paused
}

// failLocked handles a failed apply or commit whose group was dropped;
// last is the newest index that group or batch held (applyMu held).
func (f *FSM) failLocked(err error, last uint64) {
	c := Classify(err)
	if c == ClassHalt || f.getSource() == nil {
		f.halt(err)
		return
	}
	f.owed = max(f.owed, last)
	if c == ClassIO {
		f.reopen = true
	} else if f.sqlW != nil {
		// SQLite may keep a transaction open after a failed COMMIT
		// (SQLITE_FULL): end it, or the next BEGIN fails.
		f.sqlW.Exec(`ROLLBACK`)
	}
	f.state.Lock()
	prev := f.paused
	p := &PausedError{Class: c, Err: err, Since: time.Now()}
	if prev != nil {
		p.Since = prev.Since
	}
	f.paused = p
	close(f.advance)
	f.advance = make(chan struct{})
	f.state.Unlock()
	if prev == nil || prev.Class != c {
		f.log.Error("state machine paused: writing the files failed; retrying, then catching up from the Raft log",
			"class", c.String(), "error", err, "applied", f.Applied(), "owed", f.owed)
		f.notifyPause(p)
	}
	if f.resuming.CompareAndSwap(false, true) {
		go f.resumeLoop()
	}
}

// resumeLoop retries until the FSM caught up, halted or closed.
func (f *FSM) resumeLoop() {
	defer f.resuming.Store(false)
	backoff := resumeBackoffMin
	for attempt := 1; ; attempt++ {
		time.Sleep(backoff)
		done, err := f.tryResume()
		if done {
			return
		}
		if attempt <= 3 || attempt%20 == 0 {
			f.log.Warn("state machine still paused", "attempt", attempt, "error", err, "retryIn", backoff)
		}
		backoff = min(2*backoff, resumeBackoffMax)
	}
}

// tryResume makes one attempt; done is true once nothing is left to do.
func (f *FSM) tryResume() (done bool, err error) {
	if f.Paused() == nil || f.haltedOnly() != nil {
		return true, nil
	}
	src := f.getSource()
	// The files may disagree: reopen them through the repair path.
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return true, nil
	}
	f.applyMu.Lock()
	reopen := f.reopen
	f.applyMu.Unlock()
	if reopen {
		if err := f.reopenLocked(); err != nil {
			f.mu.Unlock()
			return false, fmt.Errorf("reopen fsm files: %w", err)
		}
		f.applyMu.Lock()
		f.reopen = false
		f.applyMu.Unlock()
	}
	f.mu.Unlock()

	// Files set aside (or behind the log's start): the newest local
	// snapshot first, then the log.
	f.applyMu.Lock()
	owed := f.owed
	f.applyMu.Unlock()
	if applied := f.Applied(); applied < owed {
		var l raft.Log
		if gerr := src.GetLog(applied+1, &l); gerr != nil {
			idx, rc, serr := src.LatestSnapshot()
			if serr != nil || rc == nil {
				return false, fmt.Errorf("index %d is not in the log (%v) and no snapshot opens (%v)", applied+1, gerr, serr)
			}
			if idx <= applied {
				rc.Close()
				return false, fmt.Errorf("index %d is not in the log and the newest snapshot is at %d", applied+1, idx)
			}
			if err := f.restore(rc); err != nil {
				return false, err
			}
			f.log.Info("state machine rebuilt from the newest snapshot while paused", "index", idx)
		}
	}
	return f.catchUp(src)
}

// catchUp applies the entries up to owed from the log and resumes.
func (f *FSM) catchUp(src Source) (bool, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.closed {
		return true, nil
	}
	f.applyMu.Lock()
	defer f.applyMu.Unlock()
	from := f.Applied()
	for f.Applied() < f.owed {
		first := f.Applied() + 1
		n := min(f.owed-first+1, resumeChunk)
		logs := make([]*raft.Log, 0, n)
		for i := first; i < first+n; i++ {
			l := new(raft.Log)
			if err := src.GetLog(i, l); err != nil {
				return false, fmt.Errorf("read log index %d: %w", i, err)
			}
			logs = append(logs, l)
		}
		out := make([]interface{}, len(logs))
		if err := f.applyLocked(logs, out); err != nil {
			f.abortGroupLocked()
			f.failLocked(err, logs[len(logs)-1].Index)
			return f.haltedOnly() != nil, err
		}
		if err := f.commitGroupLocked(); err != nil {
			return f.haltedOnly() != nil, err
		}
	}
	f.owed = 0
	f.state.Lock()
	p := f.paused
	f.paused = nil
	close(f.advance)
	f.advance = make(chan struct{})
	f.state.Unlock()
	f.log.Info("state machine resumed: caught up from the Raft log", "from", from, "to", f.Applied(),
		"pausedFor", time.Since(p.Since).Round(time.Millisecond))
	f.notifyPause(nil)
	return true, nil
}

// reopenLocked closes the files and opens them as Open does: checked, and
// set aside when damaged (f.mu held exclusively).
func (f *FSM) reopenLocked() error {
	f.applyMu.Lock()
	f.abortGroupLocked()
	f.applyMu.Unlock()
	f.closeFiles()
	f.bolt, f.sqlW, f.sqlR, f.stmtR, f.stmtW = nil, nil, nil, nil, nil
	err := f.openChecked()
	var d *DamageError
	if errors.As(err, &d) {
		aside, aerr := f.setAside()
		if aerr != nil {
			return aerr
		}
		f.log.Warn("fsm files damaged: set aside, rebuilding from snapshot and log", "problem", d.Error(), "setAside", aside)
		f.repaired = d
		err = f.openFiles()
	}
	if err != nil {
		// Leave no half-open handles behind for the next attempt.
		f.closeFiles()
		f.bolt, f.sqlW, f.sqlR, f.stmtR, f.stmtW = nil, nil, nil, nil, nil
	}
	return err
}
