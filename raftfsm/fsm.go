package raftfsm

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	bolt "go.etcd.io/bbolt"
)

const (
	boltFile   = "fsm.bolt"
	sqliteFile = "domain.sqlite"
)

var (
	metaBucket = []byte("_meta")
	keyApplied = []byte("applied")
	keyNow     = []byte("now")
	keyWall    = []byte("wall")

	// ErrHalted is returned once the FSM stopped applying (see Halted).
	ErrHalted = errors.New("state machine halted")
	// ErrUnknownCommand answers an ignorable command this node does not know.
	ErrUnknownCommand = errors.New("unknown command type")
)

// Response is what Raft hands back to the proposer for one entry.
type Response struct {
	Data []byte
	Err  error
}

// Options configure Open.
type Options struct {
	Dir      string
	Registry *Registry
	// Migrate brings the domain schema up to date; it runs at open and after
	// every restore, inside one transaction, and must be idempotent.
	Migrate func(tx *sql.Tx) error
	Logger  *slog.Logger
	// Grouping commits many batches at once (group.go); the zero value
	// commits each batch.
	Grouping Grouping
}

// FSM applies committed commands to a bbolt file (coordination KV) and a
// SQLite file (domain data) in the node's data directory.
type FSM struct {
	dir     string
	reg     *Registry
	migrate func(tx *sql.Tx) error
	log     *slog.Logger

	// mu guards the file handles: readers hold it shared, Restore exclusive.
	mu     sync.RWMutex
	bolt   *bolt.DB
	sqlW   *sql.DB // the single writer connection used by Apply
	sqlR   *sql.DB // read-only pool for local reads and snapshots
	stmtR  *stmtCache
	stmtW  *stmtCache // the writer's statements, reused by every batch
	closed bool

	// applyMu is held for each batch and each group commit, so a Capture
	// can pin both files at one index between two batches.
	applyMu  sync.Mutex
	grouping Grouping
	grp      *group // the open group, guarded by applyMu
	grpGen   uint64
	bulk     *bulkSet // rows queued by Apply (bulk.go), guarded by applyMu
	// pendingLast is the newest index in the open group (0: none), for
	// WaitApplied; waiters counts those waiting, so a batch that ends
	// while one waits commits at once.
	pendingLast atomic.Uint64
	// epoch is ApplyContext.Epoch (newEpoch).
	epoch   atomic.Uint64
	waiters atomic.Int64
	commits atomic.Uint64

	// level is the cluster's feature level as applied here (level.go).
	level atomic.Uint32

	state   sync.Mutex // guards the fields below
	applied uint64
	now     int64
	wall    int64
	nowAt   time.Time // local monotonic instant now was last set (see NowAt)
	wallAt  time.Time // local monotonic instant wall was last set (see WallAt)
	halted  error
	paused  *PausedError  // a storage failure being waited out (pause.go)
	advance chan struct{} // closed and replaced whenever applied moves

	// owed is the newest index Raft handed over while paused; reopen says
	// the files must be reopened through the repair path first (both
	// guarded by applyMu). resuming: a resumeLoop runs.
	owed     uint64
	reopen   bool
	resuming atomic.Bool

	repaired *DamageError // what Open found damaged and set aside, if anything

	listenMu    sync.RWMutex
	listener    func([]Event)
	onRestore   func(applied uint64)
	onPause     func(*PausedError)
	captureGate func(int64) error
	source      Source
}

// Open opens (or creates) the FSM files in dir and runs the migrations.
func Open(opts Options) (*FSM, error) {
	if opts.Registry == nil {
		opts.Registry = NewRegistry()
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if err := os.MkdirAll(opts.Dir, 0o750); err != nil {
		return nil, fmt.Errorf("create fsm dir %s: %w", opts.Dir, err)
	}
	if err := os.RemoveAll(filepath.Join(opts.Dir, captureDir)); err != nil {
		return nil, fmt.Errorf("remove stale snapshot copies: %w", err)
	}
	f := &FSM{dir: opts.Dir, reg: opts.Registry, migrate: opts.Migrate, log: opts.Logger, advance: make(chan struct{}), grouping: opts.Grouping,
		bulk: newBulkSet(opts.Grouping.Immediate)}
	if err := f.openChecked(); err != nil {
		// Damaged files are set aside and replaced by empty ones at
		// index 0: the node rebuilds them from snapshot and log.
		var d *DamageError
		if !errors.As(err, &d) {
			return nil, err
		}
		aside, aerr := f.setAside()
		if aerr != nil {
			return nil, aerr
		}
		f.log.Warn("fsm files damaged: set aside, rebuilding from snapshot and log", "problem", d.Error(), "setAside", aside)
		f.repaired = d
		if err := f.openFiles(); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// epochs numbers every FSM's epochs in the process (ApplyContext.Epoch).
var epochs atomic.Uint64

// newEpoch says the files changed other than by applying in order.
func (f *FSM) newEpoch() { f.epoch.Store(epochs.Add(1)) }

// Epoch is the ApplyContext.Epoch the next entry is applied with: memory
// a domain built at another epoch no longer holds the files.
func (f *FSM) Epoch() uint64 { return f.epoch.Load() }

// Registry is the dispatch table the FSM applies with.
func (f *FSM) Registry() *Registry { return f.reg }

func (f *FSM) openFiles() error {
	bpath := filepath.Join(f.dir, boltFile)
	// NoSync: the Raft log is the durable part; the FSM files are rebuilt
	// from snapshot + log when they disagree (see Consistent).
	bdb, err := bolt.Open(bpath, 0o600, &bolt.Options{NoSync: true, NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
	if err != nil {
		return fmt.Errorf("open fsm bolt %s: %w", bpath, err)
	}
	w, r, err := openSQLite(filepath.Join(f.dir, sqliteFile))
	if err != nil {
		bdb.Close()
		return err
	}
	f.bolt, f.sqlW, f.sqlR = bdb, w, r
	f.newEpoch()
	f.stmtR = newStmtCache(r)
	f.stmtW = newStmtCache(w)
	if err := f.initMeta(); err != nil {
		f.closeFiles()
		return err
	}
	return nil
}

func (f *FSM) initMeta() error {
	if err := f.bolt.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(metaBucket)
		return err
	}); err != nil {
		return fmt.Errorf("init fsm meta: %w", err)
	}
	tx, err := f.sqlW.Begin()
	if err != nil {
		return fmt.Errorf("begin migration: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.Exec(`CREATE TABLE IF NOT EXISTS _fsm_meta (k TEXT PRIMARY KEY, v INTEGER NOT NULL)`); err != nil {
		return fmt.Errorf("create fsm meta table: %w", err)
	}
	if f.migrate != nil {
		if err := f.migrate(tx); err != nil {
			return fmt.Errorf("migrate domain schema: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit migration: %w", err)
	}
	return f.bolt.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(metaBucket)
		f.state.Lock()
		f.applied = getU64(b, keyApplied)
		f.now = int64(getU64(b, keyNow))
		f.nowAt = time.Now()
		f.wall = int64(getU64(b, keyWall))
		f.wallAt = f.nowAt
		f.state.Unlock()
		f.level.Store(uint32(getU64(b, keyLevel)))
		return nil
	})
}

func (f *FSM) closeFiles() {
	if f.stmtR != nil {
		f.stmtR.close()
	}
	if f.stmtW != nil {
		f.stmtW.close()
	}
	if f.bolt != nil {
		f.bolt.Close()
	}
	if f.sqlW != nil {
		f.sqlW.Close()
	}
	if f.sqlR != nil {
		f.sqlR.Close()
	}
}

// Close releases the files.
func (f *FSM) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil
	}
	f.applyMu.Lock()
	if err := f.commitGroupLocked(); err != nil {
		f.log.Warn("fsm close: last group not committed (the log still holds it)", "error", err)
	}
	f.applyMu.Unlock()
	f.closed = true
	f.closeFiles()
	return nil
}

// Consistent reports whether both files agree on the last applied index.
// They are committed one after the other without fsync, so a crash between
// the two commits (or a power cut) can leave them apart; then the node must
// rebuild from snapshot and log instead of trusting them.
func (f *FSM) Consistent() (bool, error) {
	var sqlApplied int64
	err := f.sqlR.QueryRow(`SELECT COALESCE((SELECT v FROM _fsm_meta WHERE k='applied'),0)`).Scan(&sqlApplied)
	if err != nil {
		return false, fmt.Errorf("read sqlite applied index: %w", err)
	}
	return uint64(sqlApplied) == f.Applied(), nil
}

// Reset empties both files: the node then rebuilds from snapshot and log.
func (f *FSM) Reset() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.applyMu.Lock()
	f.abortGroupLocked()
	f.applyMu.Unlock()
	f.closeFiles()
	for _, name := range []string{boltFile, sqliteFile, sqliteFile + "-wal", sqliteFile + "-shm"} {
		if err := os.Remove(filepath.Join(f.dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("reset fsm: %w", err)
		}
	}
	f.state.Lock()
	f.applied, f.now, f.wall = 0, 0, 0
	f.state.Unlock()
	f.level.Store(0)
	return f.openFiles()
}

// SetListener installs the function that receives events after each commit.
// It runs on the apply path: it must not block.
func (f *FSM) SetListener(fn func([]Event)) {
	f.listenMu.Lock()
	f.listener = fn
	f.listenMu.Unlock()
}

// SetRestoreListener installs the function told that the files were
// replaced by a snapshot (event listeners lose continuity there).
func (f *FSM) SetRestoreListener(fn func(applied uint64)) {
	f.listenMu.Lock()
	f.onRestore = fn
	f.listenMu.Unlock()
}

// MaxVersion is the newest version of t this node applies (0: unknown).
func (f *FSM) MaxVersion(t CommandType) uint8 { return f.reg.MaxVersion(t) }

// Applied is the last Raft index reflected in the files.
func (f *FSM) Applied() uint64 {
	f.state.Lock()
	defer f.state.Unlock()
	return f.applied
}

// Now is the FSM time of the last applied command (milliseconds).
func (f *FSM) Now() int64 {
	f.state.Lock()
	defer f.state.Unlock()
	return f.now
}

// NowAt returns the FSM time of the last applied command and the local
// instant (with Go's monotonic reading) at which this node applied it, or
// opened or restored its files; earlier than that when the command's
// stamp was older than the estimate already reached, which never goes
// back (setClockLocked). The FSM time at any later moment is at
// least now + time.Since(at): the leader stamped it before this node
// applied it, and FSM time runs at monotonic speed. It is bookkeeping for
// estimates, never an input to Apply.
func (f *FSM) NowAt() (now int64, at time.Time) {
	f.state.Lock()
	defer f.state.Unlock()
	return f.now, f.nowAt
}

// LastWall is the wall clock the last leader stamped (display only).
func (f *FSM) LastWall() int64 {
	f.state.Lock()
	defer f.state.Unlock()
	return f.wall
}

// WallAt returns the wall clock the last leader stamped and the local
// instant (monotonic) at which this node applied it, or opened or
// restored its files: the leader's clock read at least wall +
// time.Since(at) by now. Bookkeeping for the box's clock (a floor it
// moves forward to), never an input to Apply.
func (f *FSM) WallAt() (wall int64, at time.Time) {
	f.state.Lock()
	defer f.state.Unlock()
	return f.wall, f.wallAt
}

// Halted returns the reason the FSM stopped applying, or nil: a halt, or
// a pause (a *PausedError, which matches ErrHalted and ErrPaused).
func (f *FSM) Halted() error {
	f.state.Lock()
	defer f.state.Unlock()
	if f.halted != nil {
		return f.halted
	}
	if f.paused != nil {
		return f.paused
	}
	return nil
}

// haltedOnly is the halt alone, never a pause.
func (f *FSM) haltedOnly() error {
	f.state.Lock()
	defer f.state.Unlock()
	return f.halted
}

// errFilesClosed answers a read while a paused FSM has its files closed
// (between two attempts to reopen them).
func (f *FSM) errFilesClosed() error {
	if err := f.Halted(); err != nil {
		return err
	}
	return errors.New("fsm files are closed")
}

// WaitApplied blocks until index is applied locally or ctx ends. An index
// held by the open group commits it (group.go).
func (f *FSM) WaitApplied(ctx context.Context, index uint64) error {
	// Counted before looking, so a batch ending from now on commits.
	f.waiters.Add(1)
	defer f.waiters.Add(-1)
	for {
		f.state.Lock()
		applied, ch, halted := f.applied, f.advance, f.halted
		f.state.Unlock()
		if applied >= index {
			return nil
		}
		if halted != nil {
			return halted
		}
		if p := f.pendingLast.Load(); p != 0 && p >= index {
			if err := f.Flush(); err != nil {
				return err
			}
			continue
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("wait for index %d (applied %d): %w", index, applied, ctx.Err())
		}
	}
}

// View runs fn in a read transaction of the coordination KV.
func (f *FSM) View(fn func(tx *bolt.Tx) error) error {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.bolt == nil {
		return f.errFilesClosed()
	}
	return f.bolt.View(fn)
}

// Query runs fn against the local read-only SQLite pool.
func (f *FSM) Query(fn func(db *sql.DB) error) error {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.sqlR == nil {
		return f.errFilesClosed()
	}
	return fn(f.sqlR)
}

// Read runs fn against the local read-only SQLite pool with prepared
// statements cached.
func (f *FSM) Read(fn func(q Querier) error) error {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.stmtR == nil {
		return f.errFilesClosed()
	}
	return fn(cachedDB{f.stmtR})
}

// Apply implements raft.FSM for single entries.
func (f *FSM) Apply(l *raft.Log) interface{} {
	return f.ApplyBatch([]*raft.Log{l})[0]
}

// ApplyBatch applies a batch of committed entries in one bbolt and one
// SQLite transaction, storing the last applied index in both.
//
// Mixed versions (a rolling upgrade): every node must apply every entry
// exactly as the others do, or the replicas diverge without anyone
// noticing. So an entry this node cannot apply exactly halts its FSM
// (writes answer NODE_HALTED, a clear log line says "upgrade this node")
// instead of being skipped:
//   - an envelope format other than the one this build lays out;
//   - a command type it does not know, unless the proposer marked it
//     FlagIgnorable (a pure hint whose absence changes no state);
//   - a command version newer than its handler's (RegisterVersions).
//
// A handler applies every older version exactly as the build that
// introduced it did, so a log replayed after an upgrade gives the same
// state. An entry that is corrupt (too short, bad payload) is corrupt on
// every node alike and is answered, never a halt. Proposing version v of
// a command needs every voter on a build that knows v: upgrade all boxes
// first, then turn the new command on.
func (f *FSM) ApplyBatch(logs []*raft.Log) []interface{} {
	out := make([]interface{}, len(logs))
	if err := f.haltedOnly(); err != nil {
		for i := range out {
			out[i] = Response{Err: err}
		}
		return out
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	f.applyMu.Lock()
	defer f.applyMu.Unlock()
	if p := f.Paused(); p != nil {
		// Paused (pause.go): the resume applies these from the log.
		f.owed = max(f.owed, logs[len(logs)-1].Index)
		for i := range out {
			out[i] = Response{Err: p}
		}
		return out
	}
	if err := f.applyLocked(logs, out); err != nil {
		f.abortGroupLocked()
		f.failLocked(err, logs[len(logs)-1].Index)
		return f.failed(out)
	}
	if err := f.settleGroupLocked(); err != nil {
		// Paused or halted (commitGroupLocked): the log keeps these
		// entries.
		return f.failed(out)
	}
	return out
}

// failed answers every entry of a batch with the halt or pause.
func (f *FSM) failed(out []interface{}) []interface{} {
	err := f.Halted()
	for i := range out {
		out[i] = Response{Err: err}
	}
	return out
}

// applyLocked applies logs into the open group (begun if none is open).
// An error leaves the group to be dropped: nothing of it may commit.
func (f *FSM) applyLocked(logs []*raft.Log, out []interface{}) error {
	g, err := f.openGroupLocked()
	if err != nil {
		return err
	}
	for i, l := range logs {
		if l.Index <= g.last {
			// Already in the files: the node restarted without restoring.
			out[i] = Response{Err: fmt.Errorf("index %d already applied", l.Index)}
			continue
		}
		g.last = l.Index
		g.n++
		if l.Type != raft.LogCommand {
			out[i] = Response{}
			continue
		}
		cmd, derr := Decode(l.Data)
		if errors.Is(derr, ErrNewerFormat) {
			return fmt.Errorf("index %d: %v: upgrade this node", l.Index, derr)
		}
		if derr != nil {
			// Corrupt in the same way on every node: skipping it is what
			// every node does.
			out[i] = Response{Err: derr}
			continue
		}
		if cmd.FSMTime > g.now {
			g.now = cmd.FSMTime
		}
		if cmd.WallTime != 0 {
			g.wall = cmd.WallTime
		}
		reg, known := f.reg.handlers[cmd.Type]
		if !known {
			if cmd.Flags&FlagIgnorable != 0 {
				out[i] = Response{Err: fmt.Errorf("%w %d (ignorable, skipped)", ErrUnknownCommand, cmd.Type)}
				continue
			}
			return fmt.Errorf("index %d: command type %d is unknown to this version: upgrade this node", l.Index, cmd.Type)
		}
		if v := max(cmd.Version, 1); v > reg.maxVersion {
			return fmt.Errorf("index %d: %s version %d is newer than this node applies (%d): upgrade this node",
				l.Index, reg.name, cmd.Version, reg.maxVersion)
		}
		ctx := &ApplyContext{Index: l.Index, Now: g.now, WallTime: cmd.WallTime, Version: cmd.Version, Bolt: g.btx, SQL: g.stx, DB: g.db,
			Epoch: f.epoch.Load(), fsm: f}
		data, herr := reg.handler(ctx, cmd.Payload)
		if herr != nil {
			return fmt.Errorf("index %d: apply %s: %w", l.Index, reg.name, herr)
		}
		if g.db.err != nil {
			// A queued write failed under this handler's statements.
			return fmt.Errorf("index %d: apply %s: %w", l.Index, reg.name, g.db.err)
		}
		if f.reg.onApplied != nil {
			f.reg.onApplied(ctx, cmd.Type)
		}
		out[i] = Response{Data: data}
		g.events = append(g.events, ctx.events...)
	}
	return nil
}

func (f *FSM) halt(err error) {
	f.log.Error("state machine halted: this node stops applying and serving writes", "error", err)
	f.state.Lock()
	if f.halted == nil {
		f.halted = fmt.Errorf("%w: %v", ErrHalted, err)
	}
	f.paused = nil
	close(f.advance)
	f.advance = make(chan struct{})
	f.state.Unlock()
}

func getU64(b *bolt.Bucket, k []byte) uint64 {
	if b == nil {
		return 0
	}
	v := b.Get(k)
	if len(v) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(v)
}

func putU64(b *bolt.Bucket, k []byte, v uint64) error {
	var buf [8]byte
	binary.BigEndian.PutUint64(buf[:], v)
	if err := b.Put(k, buf[:]); err != nil {
		return fmt.Errorf("store %s: %w", k, err)
	}
	return nil
}

// copyN copies exactly n bytes.
func copyN(w io.Writer, r io.Reader, n int64) error {
	got, err := io.CopyN(w, r, n)
	if err != nil {
		return fmt.Errorf("copied %d of %d bytes: %w", got, n, err)
	}
	return nil
}
