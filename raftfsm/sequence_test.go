package raftfsm_test

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/hashicorp/raft"

	"masterorder/raftfsm"
)

const (
	cmdJobAdd  raftfsm.CommandType = 50
	cmdJobDone raftfsm.CommandType = 51
)

// jobRegistry keeps jobs in an AUTOINCREMENT table, as the kitchen's print
// jobs are: added with a new number, deleted by number once done.
func jobRegistry() *raftfsm.Registry {
	reg := raftfsm.NewRegistry()
	reg.Register(cmdJobAdd, "test.jobAdd", func(ctx *raftfsm.ApplyContext, p []byte) ([]byte, error) {
		res, err := ctx.SQL.Exec(`INSERT INTO jobs(doc) VALUES(?)`, string(p))
		if err != nil {
			return nil, err
		}
		id, err := res.LastInsertId()
		if err != nil {
			return nil, err
		}
		return []byte(strconv.FormatInt(id, 10)), nil
	})
	reg.Register(cmdJobDone, "test.jobDone", func(ctx *raftfsm.ApplyContext, p []byte) ([]byte, error) {
		var id int64
		if err := json.Unmarshal(p, &id); err != nil {
			return nil, err
		}
		_, err := ctx.SQL.Exec(`DELETE FROM jobs WHERE job_id = ?`, id)
		return nil, err
	})
	return reg
}

func openJobs(t *testing.T) *raftfsm.FSM {
	t.Helper()
	f, err := raftfsm.Open(raftfsm.Options{Dir: t.TempDir(), Registry: jobRegistry(), Migrate: func(tx *sql.Tx) error {
		_, err := tx.Exec(`CREATE TABLE IF NOT EXISTS jobs (job_id INTEGER PRIMARY KEY AUTOINCREMENT, doc TEXT NOT NULL);
			CREATE TABLE IF NOT EXISTS calls (call_id INTEGER PRIMARY KEY AUTOINCREMENT, doc TEXT NOT NULL)`)
		return err
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func jobEntry(index uint64, t raftfsm.CommandType, payload string) *raft.Log {
	return entry(index, raftfsm.Command{Type: t, Version: 1, FSMTime: int64(1000 + index), Payload: []byte(payload)})
}

// A box restored from a snapshot must number the next rows of an
// AUTOINCREMENT table as the box that took it does, also after the newest
// rows were deleted (a printed ticket's job): else a later "job 6 printed"
// deletes job 6 on one box and another job, or none, on the other, and the
// unprinted-looking job prints again after a leader change.
func TestSnapshotKeepsAutoincrementCounters(t *testing.T) {
	src := openJobs(t)
	idx := uint64(0)
	apply := func(f *raftfsm.FSM, i uint64, t2 raftfsm.CommandType, p string) string {
		t.Helper()
		r := resp(t, f.Apply(jobEntry(i, t2, p)))
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		return string(r.Data)
	}
	for range 5 {
		idx++
		apply(src, idx, cmdJobAdd, `"ticket"`)
	}
	for _, id := range []string{"4", "5"} { // the newest two printed
		idx++
		apply(src, idx, cmdJobDone, id)
	}
	var snap bytes.Buffer
	if err := src.WriteSnapshot(&snap); err != nil {
		t.Fatal(err)
	}
	dst := openJobs(t)
	if err := dst.Restore(ioNopCloser{bytes.NewReader(snap.Bytes())}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(dump(t, dst), dump(t, src)) {
		t.Fatal("restored dump differs from the source's")
	}
	idx++
	want := apply(src, idx, cmdJobAdd, `"next"`)
	if got := apply(dst, idx, cmdJobAdd, `"next"`); got != want || want != "6" {
		t.Fatalf("next job after restore: source %s, restored %s (want 6 on both)", want, got)
	}

	// Every row deleted, and a table never written: the counter is kept
	// (and none made up).
	for _, id := range []string{"1", "2", "3", "6"} {
		idx++
		apply(src, idx, cmdJobDone, id)
	}
	snap.Reset()
	if err := src.WriteSnapshot(&snap); err != nil {
		t.Fatal(err)
	}
	third := openJobs(t)
	if err := third.Restore(ioNopCloser{bytes.NewReader(snap.Bytes())}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(dump(t, third), dump(t, src)) {
		t.Fatal("restored dump of the emptied table differs from the source's")
	}
	idx++
	want = apply(src, idx, cmdJobAdd, `"again"`)
	if got := apply(third, idx, cmdJobAdd, `"again"`); got != want || want != "7" {
		t.Fatalf("next job after restoring an emptied table: source %s, restored %s (want 7 on both)", want, got)
	}
	var calls int
	if err := third.Query(func(db *sql.DB) error {
		return db.QueryRow(`SELECT count(*) FROM sqlite_sequence WHERE name = 'calls'`).Scan(&calls)
	}); err != nil || calls != 0 {
		t.Fatalf("a counter for the never-written table: %d, %v", calls, err)
	}
}
