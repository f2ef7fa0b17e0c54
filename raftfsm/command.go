// Package raftfsm is the replicated state machine: the command envelope,
// a dispatch table that domain code fills, FSM time, batched applies over
// bbolt and SQLite, and snapshot/restore of both.
package raftfsm

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// CommandType identifies a handler. 1–31 are reserved for the cluster's
// own commands (coordination KV); domain commands use 32 and up.
type CommandType uint8

// Flags travel in every envelope.
type Flags uint8

const (
	// FlagIgnorable marks a command that an older node which does not know
	// its type may skip without diverging (for example a pure cache hint).
	FlagIgnorable Flags = 1 << iota
)

// envelopeFormat is the version of the envelope layout itself.
const envelopeFormat = 1

// headerLen: format, type, version, flags, fsm time (8), wall time (8).
const headerLen = 4 + 8 + 8

// Command is one Raft log entry as the FSM sees it.
type Command struct {
	Type    CommandType
	Version uint8
	Flags   Flags
	// FSMTime is the leader's FSM clock when it proposed the command,
	// in milliseconds; Apply uses max(previous, FSMTime).
	FSMTime int64
	// WallTime is the leader's wall clock in Unix milliseconds, for display
	// only (createdAt); it never decides a TTL.
	WallTime int64
	Payload  []byte
}

// ErrBadCommand is returned for an entry that cannot be decoded.
var ErrBadCommand = errors.New("malformed command")

// ErrNewerFormat is returned for an envelope laid out by a newer build:
// this node cannot know what it means, so it must not skip it (Apply
// halts on it; see the mixed-versions rule in fsm.go).
var ErrNewerFormat = errors.New("envelope format unknown to this version")

// Encode lays out the envelope.
func (c Command) Encode() []byte {
	b := make([]byte, headerLen+len(c.Payload))
	b[0] = envelopeFormat
	b[1] = byte(c.Type)
	b[2] = c.Version
	b[3] = byte(c.Flags)
	binary.BigEndian.PutUint64(b[4:], uint64(c.FSMTime))
	binary.BigEndian.PutUint64(b[12:], uint64(c.WallTime))
	copy(b[headerLen:], c.Payload)
	return b
}

// Decode parses an envelope; it never panics on corrupt input.
func Decode(b []byte) (Command, error) {
	if len(b) > 0 && b[0] != envelopeFormat {
		// Any other format byte is a layout this build does not know (a
		// newer one), whatever its length: judging it corrupt would let
		// this node skip what the others apply.
		return Command{}, fmt.Errorf("%w: %w: format %d", ErrBadCommand, ErrNewerFormat, b[0])
	}
	if len(b) < headerLen {
		return Command{}, fmt.Errorf("%w: %d bytes, want at least %d", ErrBadCommand, len(b), headerLen)
	}
	c := Command{
		Type:     CommandType(b[1]),
		Version:  b[2],
		Flags:    Flags(b[3]),
		FSMTime:  int64(binary.BigEndian.Uint64(b[4:])),
		WallTime: int64(binary.BigEndian.Uint64(b[12:])),
	}
	if c.FSMTime < 0 {
		return Command{}, fmt.Errorf("%w: negative fsm time", ErrBadCommand)
	}
	c.Payload = b[headerLen:]
	return c, nil
}
