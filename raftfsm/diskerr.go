package raftfsm

import (
	"errors"
	"syscall"

	berrors "go.etcd.io/bbolt/errors"
	sqlite "modernc.org/sqlite"
)

// A write of the FSM files can fail because the card is full, gone
// read-only or failing. Which failures the FSM waits out and which make
// it reopen its files is decided here, and only here (Classify).

// Class says what a failed write of the FSM files calls for.
type Class int

const (
	// ClassHalt: not a storage failure (a command this build cannot
	// apply exactly): the FSM halts, as every node does on that entry.
	ClassHalt Class = iota
	// ClassFull: no space (ENOSPC, EDQUOT, EFBIG, SQLITE_FULL, bbolt's
	// size limit). The failed transaction was rolled back and the files
	// are as the last commit left them: pause, retry, catch up.
	ClassFull
	// ClassReadOnly: the file system refuses writes (EROFS, an ext4 card
	// remounted read-only after an error). Nothing was written: pause and
	// retry; the box says so, and exits to its unit if it lasts.
	ClassReadOnly
	// ClassIO: an I/O error, damage, or a commit that reached one file
	// and not the other. The files may disagree or be torn: reopen them
	// through the repair path (repair.go) and rebuild what is set aside.
	ClassIO
)

func (c Class) String() string {
	switch c {
	case ClassFull:
		return "full"
	case ClassReadOnly:
		return "readonly"
	case ClassIO:
		return "io"
	default:
		return "halt"
	}
}

// tornCommit marks a failure after SQLite committed and before bbolt
// did: the two files now hold different indexes, whatever the cause.
type tornCommit struct{ err error }

func (e *tornCommit) Error() string { return "commit bolt after sqlite: " + e.err.Error() }
func (e *tornCommit) Unwrap() error { return e.err }

// SQLite primary result codes (the low byte of an extended code).
const (
	sqliteReadOnly = 8
	sqliteIOErr    = 10
	sqliteCorrupt  = 11
	sqliteFull     = 13
	sqliteCantOpen = 14
	sqliteNotADB   = 26
)

// Classify decides what a failed write of the FSM files calls for.
func Classify(err error) Class {
	if err == nil {
		return ClassHalt
	}
	var torn *tornCommit
	var dmg *DamageError
	if errors.As(err, &torn) || errors.As(err, &dmg) {
		return ClassIO
	}
	switch {
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT), errors.Is(err, syscall.EFBIG),
		errors.Is(err, berrors.ErrMaxSizeReached):
		return ClassFull
	case errors.Is(err, syscall.EROFS):
		return ClassReadOnly
	case errors.Is(err, syscall.EIO):
		return ClassIO
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqliteFull:
			return ClassFull
		case sqliteReadOnly:
			return ClassReadOnly
		case sqliteIOErr, sqliteCorrupt, sqliteNotADB, sqliteCantOpen:
			return ClassIO
		}
	}
	return ClassHalt
}
