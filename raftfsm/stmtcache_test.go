package raftfsm

import (
	"bytes"
	"database/sql"
	"io"
	"log/slog"
	"strconv"
	"testing"

	"github.com/hashicorp/raft"
)

// The writer's statements are prepared once and reused by every later
// batch (not parsed again per batch), stay correct across batches, and are
// prepared afresh on the new files after a Restore.
func TestWriterStatementsOutliveTheirBatch(t *testing.T) {
	const bump = `UPDATE n SET v = v + ?`
	const read = `SELECT v FROM n`
	reg := NewRegistry()
	reg.Register(7, "test.bump", func(ctx *ApplyContext, p []byte) ([]byte, error) {
		if _, err := ctx.DB.Exec(bump, 1); err != nil {
			return nil, err
		}
		var v int64
		if err := ctx.DB.QueryRow(read).Scan(&v); err != nil {
			return nil, err
		}
		return []byte(strconv.FormatInt(v, 10)), nil
	})
	migrate := func(tx *sql.Tx) error {
		_, err := tx.Exec(`CREATE TABLE IF NOT EXISTS n (v INTEGER NOT NULL); INSERT INTO n(v) SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM n)`)
		return err
	}
	open := func() *FSM {
		f, err := Open(Options{Dir: t.TempDir(), Registry: reg, Migrate: migrate, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	f := open()
	idx := uint64(0)
	batch := func(f *FSM, n int) []string {
		var logs []*raft.Log
		for range n {
			idx++
			c := Command{Type: 7, Version: 1, FSMTime: int64(idx), Payload: []byte("{}")}
			logs = append(logs, &raft.Log{Index: idx, Term: 1, Type: raft.LogCommand, Data: c.Encode()})
		}
		var out []string
		for _, r := range f.ApplyBatch(logs) {
			res := r.(Response)
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			out = append(out, string(res.Data))
		}
		return out
	}
	if got := batch(f, 2); got[0] != "1" || got[1] != "2" {
		t.Fatalf("first batch %v", got)
	}
	first := f.stmtW.peek(bump)
	if first == nil || f.stmtW.peek(read) == nil {
		t.Fatal("statements of the first batch not kept for the next")
	}
	for i := range 5 {
		if got := batch(f, 3); got[2] != strconv.Itoa(5+3*i) {
			t.Fatalf("batch %d: %v", i, got)
		}
	}
	if f.stmtW.peek(bump) != first {
		t.Fatal("statement prepared again by a later batch")
	}

	// A Restore replaces the files: the old statements go with them.
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var sink memSinkInternal
	if err := snap.Persist(&sink); err != nil {
		t.Fatal(err)
	}
	snap.Release()
	batch(f, 1) // 18, not in the snapshot
	if err := f.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err != nil {
		t.Fatal(err)
	}
	if f.stmtW.peek(bump) != nil {
		t.Fatal("statements of the replaced files kept")
	}
	idx = f.Applied()
	if got := batch(f, 2); got[1] != "19" {
		t.Fatalf("after restore %v, want 18 then 19", got)
	}
	if f.stmtW.peek(bump) == nil {
		t.Fatal("statements not kept after restore")
	}
}

type memSinkInternal struct{ bytes.Buffer }

func (s *memSinkInternal) ID() string    { return "mem" }
func (s *memSinkInternal) Cancel() error { return nil }
func (s *memSinkInternal) Close() error  { return nil }
