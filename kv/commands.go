package kv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
	"masterorder/raftfsm"
)

// Command types of the coordination KV (reserved range 1–31).
const (
	CmdOp     raftfsm.CommandType = 1
	CmdExpire raftfsm.CommandType = 2
)

// Operation names carried in an op command.
const (
	OpSetIfAbsent      = "setIfAbsent"
	OpPut              = "put"
	OpDelete           = "delete"
	OpCompareAndDelete = "compareAndDelete"
	OpTxn              = "txn"
)

type opCommand struct {
	Op    string `json:"op"`
	Key   string `json:"key,omitempty"`
	Value []byte `json:"value,omitempty"`
	TTLms int64  `json:"ttlMs,omitempty"`
	Conds []Cond `json:"conds,omitempty"`
	Ops   []Op   `json:"ops,omitempty"`
}

// Result is the answer of an op command.
type Result struct {
	OK       bool   `json:"ok"`
	Revision uint64 `json:"revision"` // index of the command (the fencing token of a lock)
	Error    string `json:"error,omitempty"`
}

type expireCommand struct {
	Limit int `json:"limit"`
}

// Register adds the KV commands to the FSM's dispatch table.
func Register(reg *raftfsm.Registry) {
	reg.Register(CmdOp, "kv.op", applyOp)
	reg.Register(CmdExpire, "kv.expire", applyExpire)
}

func applyOp(ctx *raftfsm.ApplyContext, payload []byte) ([]byte, error) {
	var c opCommand
	if err := json.Unmarshal(payload, &c); err != nil {
		return json.Marshal(Result{Error: "malformed kv command"})
	}
	if msg := c.validate(); msg != "" {
		return json.Marshal(Result{Error: msg})
	}
	t := NewTx(ctx.Bolt, ctx.Now, ctx.Index)
	var ok bool
	var err error
	switch c.Op {
	case OpSetIfAbsent:
		ok, err = t.SetIfAbsent(c.Key, c.Value, time.Duration(c.TTLms)*time.Millisecond)
	case OpPut:
		ok, err = true, t.Put(c.Key, c.Value, time.Duration(c.TTLms)*time.Millisecond)
	case OpDelete:
		ok, err = t.Delete(c.Key)
	case OpCompareAndDelete:
		ok, err = t.CompareAndDelete(c.Key, c.Value)
	case OpTxn:
		ok, err = t.Txn(c.Conds, c.Ops)
	}
	if err != nil {
		return nil, err
	}
	return json.Marshal(Result{OK: ok, Revision: ctx.Index})
}

func (c opCommand) validate() string {
	if c.TTLms < 0 {
		return "negative ttl"
	}
	switch c.Op {
	case OpSetIfAbsent, OpPut, OpDelete, OpCompareAndDelete:
		if checkKey(c.Key) != nil {
			return "bad key"
		}
	case OpTxn:
		if len(c.Conds)+len(c.Ops) > 64 {
			return "txn too large"
		}
		for _, o := range c.Ops {
			if checkKey(o.Key) != nil || o.TTLms < 0 {
				return "bad key in txn"
			}
		}
	default:
		return "unknown kv op"
	}
	return ""
}

func applyExpire(ctx *raftfsm.ApplyContext, payload []byte) ([]byte, error) {
	var c expireCommand
	if err := json.Unmarshal(payload, &c); err != nil || c.Limit <= 0 {
		c.Limit = 1000
	}
	n, err := NewTx(ctx.Bolt, ctx.Now, ctx.Index).ExpireDue(c.Limit)
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]int{"expired": n})
}

// Proposer proposes a command through Raft (the node forwards to the leader).
type Proposer interface {
	Propose(ctx context.Context, t raftfsm.CommandType, payload []byte) ([]byte, error)
}

// Viewer reads the local FSM and estimates the current FSM time.
type Viewer interface {
	View(fn func(tx *bolt.Tx) error) error
	FSMNow() int64
}

// Client is the KV as the rest of the node uses it outside Apply.
type Client struct {
	P Proposer
	V Viewer
}

func (c Client) do(ctx context.Context, cmd opCommand) (Result, error) {
	payload, err := json.Marshal(cmd)
	if err != nil {
		return Result{}, fmt.Errorf("encode kv %s: %w", cmd.Op, err)
	}
	out, err := c.P.Propose(ctx, CmdOp, payload)
	if err != nil {
		return Result{}, err
	}
	var r Result
	if err := json.Unmarshal(out, &r); err != nil {
		return Result{}, fmt.Errorf("decode kv result: %w", err)
	}
	if r.Error != "" {
		return r, errors.New("kv: " + r.Error)
	}
	return r, nil
}

// SetIfAbsent sets key when it is not live.
func (c Client) SetIfAbsent(ctx context.Context, key string, value []byte, ttl time.Duration) (bool, error) {
	r, err := c.do(ctx, opCommand{Op: OpSetIfAbsent, Key: key, Value: value, TTLms: ttl.Milliseconds()})
	return r.OK, err
}

// Put sets key unconditionally.
func (c Client) Put(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	_, err := c.do(ctx, opCommand{Op: OpPut, Key: key, Value: value, TTLms: ttl.Milliseconds()})
	return err
}

// Delete removes key.
func (c Client) Delete(ctx context.Context, key string) (bool, error) {
	r, err := c.do(ctx, opCommand{Op: OpDelete, Key: key})
	return r.OK, err
}

// CompareAndDelete removes key if its value is expected.
func (c Client) CompareAndDelete(ctx context.Context, key string, expected []byte) (bool, error) {
	r, err := c.do(ctx, opCommand{Op: OpCompareAndDelete, Key: key, Value: expected})
	return r.OK, err
}

// Lock takes key for token; the fencing token is the Raft index of the
// write that took it, increasing with every new holder.
func (c Client) Lock(ctx context.Context, key, token string, ttl time.Duration) (fence uint64, ok bool, err error) {
	r, err := c.do(ctx, opCommand{Op: OpSetIfAbsent, Key: key, Value: []byte(token), TTLms: ttl.Milliseconds()})
	if err != nil || !r.OK {
		return 0, false, err
	}
	return r.Revision, true, nil
}

// Unlock releases key if token still holds it.
func (c Client) Unlock(ctx context.Context, key, token string) (bool, error) {
	return c.CompareAndDelete(ctx, key, []byte(token))
}

// Get reads key from the local replica at the estimated FSM time.
func (c Client) Get(key string) (Entry, bool, error) {
	var e Entry
	var ok bool
	err := c.Read(func(tx *Tx) { e, ok = tx.Get(key) })
	return e, ok, err
}

// Read runs fn on one view of the local replica at the estimated FSM
// time: several keys read together cost one bbolt transaction, and agree.
func (c Client) Read(fn func(tx *Tx)) error {
	return c.V.View(func(tx *bolt.Tx) error {
		fn(NewTx(tx, c.V.FSMNow(), 0))
		return nil
	})
}

// List returns the live keys with prefix from the local replica.
func (c Client) List(prefix string, limit int) ([]Entry, error) {
	var out []Entry
	err := c.V.View(func(tx *bolt.Tx) error {
		NewTx(tx, c.V.FSMNow(), 0).Scan(prefix, func(e Entry) bool {
			out = append(out, e)
			return len(out) < limit
		})
		return nil
	})
	return out, err
}

// Expire asks the cluster to remove due keys (the leader calls it
// periodically; expired keys are already invisible).
func (c Client) Expire(ctx context.Context, limit int) (int, error) {
	payload, _ := json.Marshal(expireCommand{Limit: limit})
	out, err := c.P.Propose(ctx, CmdExpire, payload)
	if err != nil {
		return 0, err
	}
	var r map[string]int
	if err := json.Unmarshal(out, &r); err != nil {
		return 0, fmt.Errorf("decode expire result: %w", err)
	}
	return r["expired"], nil
}
