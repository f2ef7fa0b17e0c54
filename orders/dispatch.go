package orders

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"

	"masterorder/kv"
	"masterorder/raftfsm"
)

// command is a domain command's payload. valid is required, not opt-in: a
// committed entry whose fields would break a database constraint or a KV
// limit must be answered with a rejection, not halt the FSM on every node
// (validate.go).
type command interface{ valid() bool }

// applyFunc applies one decoded, valid command; tx is the coordination KV
// at the command's FSM time and index.
type applyFunc[T command] func(ctx *raftfsm.ApplyContext, tx *kv.Tx, c T) ([]byte, error)

// commandTable is the registry commands go into, at the versions
// maxVersion names.
type commandTable struct {
	reg        *raftfsm.Registry
	maxVersion func(raftfsm.CommandType) uint8
	// admit is the registry's admission state (admitstate.go): the
	// commands that change what it holds keep it (keptBy).
	admit *admitState
}

// register adds the handler of command type t: its payload is decoded as a
// T and checked with T.valid before apply runs; a bad one is answered 400
// MALFORMED_COMMAND (never a halt: the entry is committed, every node
// answers the same).
func register[T command](tab commandTable, t raftfsm.CommandType, name string, apply applyFunc[T]) {
	apply = keptBy(tab.admit, t, apply)
	tab.reg.RegisterVersions(t, name, tab.maxVersion(t), func(ctx *raftfsm.ApplyContext, payload []byte) ([]byte, error) {
		c, good := decodeCommand[T](ctx.Version, payload)
		if !good {
			return reject(http.StatusBadRequest, "MALFORMED_COMMAND")
		}
		return apply(ctx, kv.NewTx(ctx.Bolt, ctx.Now, ctx.Index), c)
	})
}

// decodeCommand decodes payload, of version v, as one T that passes its
// checks. Strict in syntax and types (json.Unmarshal refuses trailing data
// and mistyped fields); unknown fields are ignored on purpose: an entry
// written by an older build with a field since dropped must replay as it
// applied then, so a field is never added or dropped without a new
// command version. A binaryCommand's newer versions are its binary form.
func decodeCommand[T command](v uint8, payload []byte) (T, bool) {
	var c T
	if b, binary := any(&c).(binaryDecoder); binary && v >= b.binaryFrom() {
		if !b.decodeBinary(payload) || !c.valid() {
			return c, false
		}
		return c, true
	}
	if err := json.Unmarshal(payload, &c); err != nil || !c.valid() {
		return c, false
	}
	return c, true
}

// binaryCommand is a command whose versions from binaryFrom on are a
// compact binary form instead of JSON (placecodec.go).
type binaryCommand interface {
	binaryFrom() uint8
	appendBinary([]byte) []byte
}

type binaryDecoder interface {
	binaryFrom() uint8
	decodeBinary([]byte) bool
}

// encodeCommand is cmd's payload at version v.
func encodeCommand(cmd any, v uint8) ([]byte, error) {
	if b, binary := cmd.(binaryCommand); binary && v >= b.binaryFrom() {
		// One buffer of a typical order's size, not a doubling from nil.
		return b.appendBinary(make([]byte, 0, 384)), nil
	}
	return json.Marshal(cmd)
}

// Result is what every domain command answers: an HTTP status with either
// a success body or a reason code (the handler adds the message in the
// caller's language; Apply knows no languages).
type Result struct {
	Status       int             `json:"status"`
	Reason       string          `json:"reason,omitempty"`
	RetryAfterMs int64           `json:"retryAfterMs,omitempty"`
	Replay       bool            `json:"replay,omitempty"`
	Body         json.RawMessage `json:"body,omitempty"`
	SKUs         []string        `json:"skus,omitempty"`
	Field        string          `json:"field,omitempty"` // the bad field of a 400, when named
}

// decodeResult is json.Unmarshal(out, &r) for every out. An admitted
// order's answer as json.Marshal writes it, {"status":200,"body":{…}} or
// with "replay":true before the body, is read without reflection: the
// body is checked to be exactly one JSON object (so nothing else follows
// it) and copied. Anything else goes through encoding/json.
func decodeResult(out []byte) (Result, error) {
	const head, replay, body = `{"status":200,`, `"replay":true,`, `"body":`
	if rest, found := bytes.CutPrefix(out, []byte(head)); found && len(rest) > 0 && rest[len(rest)-1] == '}' {
		rest = rest[:len(rest)-1]
		r := Result{Status: http.StatusOK}
		rest, r.Replay = bytes.CutPrefix(rest, []byte(replay))
		if b, found := bytes.CutPrefix(rest, []byte(body)); found && len(b) >= 2 && b[0] == '{' && b[len(b)-1] == '}' && json.Valid(b) {
			r.Body = bytes.Clone(b)
			return r, nil
		}
	}
	var r Result
	err := json.Unmarshal(out, &r)
	return r, err
}

func ok(body any) ([]byte, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("encode result: %w", err)
	}
	return json.Marshal(Result{Status: http.StatusOK, Body: b})
}

func reject(status int, reason string) ([]byte, error) {
	return json.Marshal(Result{Status: status, Reason: reason})
}

// Staff requests the forwarding layer may commit twice (a retry after an
// unknown outcome) carry a request id: the FSM remembers each one's first
// success for requestMemoryMs of FSM time (the forwarding layer retries
// for 5 s at most) and answers a second apply with it, changing nothing.
// Kept short: every remembered answer (a whole bill, for checkout) is in
// the snapshots until it lapses.
const requestMemoryMs = 2 * 60 * 1000

// recalled is the remembered result of request id, if it was applied.
func recalled(tx *kv.Tx, id string) ([]byte, bool) {
	if id == "" {
		return nil, false
	}
	e, live := tx.Get(keyRequest(id))
	return e.Value, live
}

// remember keeps a success as the answer of request id.
func remember(tx *kv.Tx, id string, out []byte, err error) ([]byte, error) {
	if err != nil || id == "" {
		return out, err
	}
	if err := tx.Put(keyRequest(id), out, msDuration(requestMemoryMs)); err != nil {
		return nil, err
	}
	return out, nil
}
