package raftfsm

import (
	"database/sql"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// ApplyContext is what a handler sees for one committed command. Handlers
// must be deterministic: everything variable comes in the payload, the time
// is Now, and they touch nothing but Bolt and SQL.
type ApplyContext struct {
	Index    uint64 // Raft log index of this command
	Now      int64  // FSM time in milliseconds, never runs backwards
	WallTime int64  // leader's wall clock (display only)
	Version  uint8  // command version, for handlers that read old layouts
	Bolt     *bolt.Tx
	// SQL is the bare transaction: it sees rows queued through DB only
	// after FlushQueued.
	SQL *sql.Tx
	// DB is SQL with prepared statements cached across batches; use it
	// for the domain's fixed queries. It also offers
	// QueueInsert(table, cols string, args ...any) error: a row whose
	// insert Apply needs no answer from, written with others at the
	// group's commit or before a statement on DB that names the table
	// (bulk.go); and QueueSet(table, keyCol, valCol string, key, val
	// any) error: UPDATE table SET valCol = val WHERE keyCol = key,
	// written under the same rules, the newest value per key only.
	DB Querier
	// Epoch names what the files hold as the apply path left them: it
	// changes whenever they change other than by applying entries in
	// order (opened, an applied group dropped, a snapshot restored, reset
	// or repaired), and no two openings of any FSM in the process share
	// one. A handler's memory built from the files at another epoch is
	// stale (orders' admission state, docs/architecture.md).
	Epoch uint64

	events []Event
	fsm    *FSM // the FSM applying it (its own commands, level.go)
}

// FlushQueued writes the rows and values queued through DB.QueueInsert
// and DB.QueueSet now, for code that reads through SQL instead of DB.
func (c *ApplyContext) FlushQueued() error {
	if db, ok := c.DB.(*cachedTx); ok {
		return db.flushAll()
	}
	return nil
}

// Event is something a committed command tells listeners (the kitchen
// stream) once its batch is durable in the FSM files.
type Event struct {
	Index uint64 // Raft log index of the command that emitted it
	Type  string
	Data  []byte
}

// Emit queues an event that is published after the batch commits.
func (c *ApplyContext) Emit(typ string, data []byte) {
	c.events = append(c.events, Event{Index: c.Index, Type: typ, Data: data})
}

// Handler applies one command. The returned bytes are the result handed to
// the proposer (usually JSON). An error means the node could not apply a
// committed entry (disk, bug): the FSM stops applying rather than diverge.
// Domain rejections are results, not errors, and a handler checks before it
// writes, so a rejection leaves nothing half-done.
type Handler func(ctx *ApplyContext, payload []byte) ([]byte, error)

type registration struct {
	name    string
	handler Handler
	// maxVersion is the newest command version the handler applies.
	maxVersion uint8
}

// Registry is the dispatch table: domain code registers its commands, the
// FSM stays generic.
type Registry struct {
	handlers map[CommandType]registration
	// top is this build's feature level and allowed what each level
	// allows (SetFeatureLevels, level.go); zero: level 1, all allowed.
	top     uint32
	allowed LevelTable
	// onApplied hears of every entry a handler applied (OnApplied).
	onApplied func(ctx *ApplyContext, t CommandType)
	// memory is the domain's memory of the files (SetMemory).
	memory any
}

// SetMemory hands the FSM the domain's memory of the files (what its
// handlers keep between entries), so the domain's read side, which has
// the FSM and not the handlers, can find it again (Memory). The FSM only
// keeps it.
func (r *Registry) SetMemory(m any) { r.memory = m }

// Memory is what SetMemory was given (nil: nothing).
func (r *Registry) Memory() any { return r.memory }

// OnApplied installs fn, called on the apply path after each command
// whatever its type was applied without error, with that command's
// context: a domain that keeps memory of the files learns which
// commands, its own or others' (the KV's), may have changed them. fn
// must be deterministic and must not write. Install it before the FSM
// applies anything.
func (r *Registry) OnApplied(fn func(ctx *ApplyContext, t CommandType)) { r.onApplied = fn }

// NewRegistry returns a dispatch table holding only the FSM's own
// command (the feature level, level.go).
func NewRegistry() *Registry {
	r := &Registry{handlers: map[CommandType]registration{}}
	r.Register(CmdFeatureLevel, "cluster.featureLevel", func(ctx *ApplyContext, p []byte) ([]byte, error) {
		return ctx.fsm.applyFeatureLevel(ctx, p)
	})
	return r
}

// Register adds a handler for version 1 of a command; registering a type
// twice is a programming error.
func (r *Registry) Register(t CommandType, name string, h Handler) {
	r.RegisterVersions(t, name, 1, h)
}

// RegisterVersions adds a handler that applies versions 1..maxVersion of a
// command, each exactly as the build that introduced it did (it branches
// on ApplyContext.Version). A newer version halts this node (see Apply).
func (r *Registry) RegisterVersions(t CommandType, name string, maxVersion uint8, h Handler) {
	if _, dup := r.handlers[t]; dup {
		panic(fmt.Sprintf("raftfsm: command type %d registered twice", t))
	}
	if maxVersion < 1 {
		panic(fmt.Sprintf("raftfsm: command type %d registered without a version", t))
	}
	r.handlers[t] = registration{name: name, handler: h, maxVersion: maxVersion}
}

// Has reports whether a type is registered.
func (r *Registry) Has(t CommandType) bool {
	_, ok := r.handlers[t]
	return ok
}

// MaxVersion is the newest version of t this node applies (0: unknown).
func (r *Registry) MaxVersion(t CommandType) uint8 {
	return r.handlers[t].maxVersion
}

// Name returns the registered name of a type, for logs and metrics.
func (r *Registry) Name(t CommandType) string {
	if reg, ok := r.handlers[t]; ok {
		return reg.name
	}
	return fmt.Sprintf("unknown(%d)", t)
}
