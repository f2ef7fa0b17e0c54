package raftfsm_test

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"masterorder/raftfsm"
)

// The queue's test commands: cmdBulk's ops queue rows (QueueInsert) into
// log (AUTOINCREMENT) and notes (a plain rowid, reused after a delete of
// the largest), read them back, delete some, and touch a table the queue
// never holds.
const cmdBulk raftfsm.CommandType = 60

type bulkCmd struct {
	Op string `json:"op"`
	K  string `json:"k"`
	N  int    `json:"n"`
}

const (
	logCols   = "k, v, n"
	notesCols = "k, b"
)

func bulkRegistry() *raftfsm.Registry {
	reg := raftfsm.NewRegistry()
	reg.Register(cmdBulk, "test.bulk", func(ctx *raftfsm.ApplyContext, p []byte) ([]byte, error) {
		var c bulkCmd
		if err := json.Unmarshal(p, &c); err != nil {
			return []byte(`{"error":"malformed"}`), nil
		}
		q := ctx.DB.(queuer)
		queue := func(n int) error {
			for i := range n {
				v := any(fmt.Sprintf("%s#%d@%d", c.K, i, ctx.Index))
				if i%3 == 2 {
					v = nil
				}
				if err := q.QueueInsert("log", logCols, c.K, v, int64(i)); err != nil {
					return err
				}
				if err := q.QueueInsert("notes", notesCols, c.K, []byte{byte(i), byte(ctx.Index)}); err != nil {
					return err
				}
			}
			return nil
		}
		var count, maxID, notes int64
		switch c.Op {
		case "log":
			return nil, queue(c.N)
		case "read":
			if err := queue(c.N); err != nil {
				return nil, err
			}
			if err := ctx.DB.QueryRow(`SELECT count(*), COALESCE(MAX(id), 0) FROM log`).Scan(&count, &maxID); err != nil {
				return nil, err
			}
			if err := ctx.DB.QueryRow(`SELECT count(*) FROM "notes" WHERE k = ?`, c.K).Scan(&notes); err != nil {
				return nil, err
			}
		case "bare":
			if err := queue(c.N); err != nil {
				return nil, err
			}
			if err := ctx.FlushQueued(); err != nil {
				return nil, err
			}
			if err := ctx.SQL.QueryRow(`SELECT count(*), COALESCE(MAX(id), 0) FROM log`).Scan(&count, &maxID); err != nil {
				return nil, err
			}
		case "del":
			if _, err := ctx.DB.Exec(`DELETE FROM notes WHERE id = (SELECT MAX(id) FROM notes)`); err != nil {
				return nil, err
			}
			res, err := ctx.DB.Exec(`DELETE FROM log WHERE k = ?`, c.K)
			if err != nil {
				return nil, err
			}
			count, _ = res.RowsAffected()
		case "count":
			if _, err := ctx.DB.Exec(`UPDATE counter SET n = n + 1`); err != nil {
				return nil, err
			}
			if err := ctx.DB.QueryRow(`SELECT n FROM counter`).Scan(&count); err != nil {
				return nil, err
			}
		case "set":
			// The newest value of a key wins; rows go beside it.
			if err := q.QueueSet("levels", "k", "n", c.K, c.N); err != nil {
				return nil, err
			}
			if err := queue(1); err != nil {
				return nil, err
			}
			if err := q.QueueSet("levels", "k", "n", c.K, int64(c.N*2)+int64(ctx.Index)); err != nil {
				return nil, err
			}
		case "lvl":
			// A new key's set before its row's insert changes nothing,
			// the one after it does: queueing one writes the other first.
			nk := fmt.Sprintf("%s@%d", c.K, ctx.Index)
			if err := q.QueueSet("levels", "k", "n", nk, 1); err != nil {
				return nil, err
			}
			if err := q.QueueInsert("levels", "k, n", nk, c.N); err != nil {
				return nil, err
			}
			if err := q.QueueSet("levels", "k", "n", nk, c.N+1); err != nil {
				return nil, err
			}
			if err := q.QueueSet("levels", "k", "n", c.K, c.N); err != nil {
				return nil, err
			}
		case "lvlread":
			if err := q.QueueSet("levels", "k", "n", c.K, c.N); err != nil {
				return nil, err
			}
			if err := ctx.DB.QueryRow(`SELECT count(*), total(n) FROM levels`).Scan(&count, &maxID); err != nil {
				return nil, err
			}
		case "ddl":
			if err := queue(c.N); err != nil {
				return nil, err
			}
			if _, err := ctx.DB.Exec(`CREATE TABLE IF NOT EXISTS ` + c.K + `(x)`); err != nil {
				return nil, err
			}
			// The bare transaction: the DDL must have written the rows.
			if err := ctx.SQL.QueryRow(`SELECT count(*) FROM log`).Scan(&count); err != nil {
				return nil, err
			}
		}
		return json.Marshal([3]int64{count, maxID, notes})
	})
	reg.Register(cmdSetSteps, "test.setSteps", applySetSteps)
	return reg
}

// queuer is ApplyContext.DB's queue (raftfsm/bulk.go).
type queuer interface {
	QueueInsert(table, cols string, args ...any) error
	QueueSet(table, keyCol, valCol string, key, val any) error
}

// cmdSetSteps runs its steps on the levels table: "set" queues k's level
// (QueueSet), "read" reads it through DB and "bare" through the bare
// transaction, "add" adds n through DB, "flush" is FlushQueued, "ddl" a
// schema change, "other" a write to another table. It answers what the
// reads read.
const cmdSetSteps raftfsm.CommandType = 61

type setStep struct {
	Op string `json:"op"`
	K  string `json:"k,omitempty"`
	N  int64  `json:"n,omitempty"`
}

func applySetSteps(ctx *raftfsm.ApplyContext, p []byte) ([]byte, error) {
	var steps []setStep
	if err := json.Unmarshal(p, &steps); err != nil {
		return nil, err
	}
	var read []int64
	for _, s := range steps {
		var err error
		var n int64
		switch s.Op {
		case "set":
			err = ctx.DB.(queuer).QueueSet("levels", "k", "n", s.K, s.N)
		case "read":
			err = ctx.DB.QueryRow(`SELECT n FROM levels WHERE k = ?`, s.K).Scan(&n)
			read = append(read, n)
		case "bare":
			err = ctx.SQL.QueryRow(`SELECT n FROM levels WHERE k = ?`, s.K).Scan(&n)
			read = append(read, n)
		case "add":
			_, err = ctx.DB.Exec(`UPDATE levels SET n = n + ? WHERE k = ?`, s.N, s.K)
		case "flush":
			err = ctx.FlushQueued()
		case "ddl":
			_, err = ctx.DB.Exec(`CREATE TABLE IF NOT EXISTS extra (x)`)
		case "other":
			_, err = ctx.DB.Exec(`UPDATE counter SET n = n + 1`)
		default:
			err = fmt.Errorf("step %q", s.Op)
		}
		if err != nil {
			return nil, err
		}
	}
	return json.Marshal(read)
}

func stepsEntry(index uint64, steps ...setStep) *raft.Log {
	p, _ := json.Marshal(steps)
	return entry(index, raftfsm.Command{Type: cmdSetSteps, Version: 1, FSMTime: int64(index) * 10, Payload: p})
}

func bulkMigrate(tx *sql.Tx) error {
	for _, s := range []string{
		`CREATE TABLE IF NOT EXISTS log (id INTEGER PRIMARY KEY AUTOINCREMENT, k TEXT NOT NULL, v TEXT, n INTEGER NOT NULL)`,
		`CREATE INDEX IF NOT EXISTS log_k ON log(k)`,
		`CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY, k TEXT NOT NULL, b BLOB)`,
		`CREATE TABLE IF NOT EXISTS counter (n INTEGER NOT NULL)`,
		`INSERT INTO counter(n) SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM counter)`,
		`CREATE TABLE IF NOT EXISTS levels (k TEXT PRIMARY KEY, n INTEGER NOT NULL CHECK (n >= 0))`,
		`INSERT OR IGNORE INTO levels(k, n) VALUES ('a', 0), ('b', 0), ('c', 0), ('k0', 0), ('k1', 0), ('k2', 0), ('k3', 0), ('k4', 0), ('k5', 0)`,
	} {
		if _, err := tx.Exec(s); err != nil {
			return err
		}
	}
	return nil
}

func openBulk(t *testing.T, dir string, g raftfsm.Grouping) *raftfsm.FSM {
	t.Helper()
	f, err := raftfsm.Open(raftfsm.Options{Dir: dir, Registry: bulkRegistry(), Migrate: bulkMigrate, Grouping: g})
	if err != nil {
		t.Fatalf("open fsm: %v", err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func bulkEntry(index uint64, c bulkCmd) *raft.Log {
	p, _ := json.Marshal(c)
	return entry(index, raftfsm.Command{Type: cmdBulk, Version: 1, FSMTime: int64(index) * 10, Payload: p})
}

func applyAnswers(t *testing.T, f *raftfsm.FSM, logs ...*raft.Log) []string {
	t.Helper()
	var out []string
	for i, r := range f.ApplyBatch(logs) {
		res := resp(t, r)
		if res.Err != nil {
			t.Fatalf("entry %d: %v", logs[i].Index, res.Err)
		}
		out = append(out, string(res.Data))
	}
	return out
}

func rowsOf(t *testing.T, f *raftfsm.FSM, query string) int64 {
	t.Helper()
	var n int64
	if err := f.Query(func(db *sql.DB) error { return db.QueryRow(query).Scan(&n) }); err != nil {
		t.Fatal(err)
	}
	return n
}

// A read in the same Apply sees the rows queued before it, its own
// included; rows go in multi-row statements, and a statement that names
// no queued table leaves them queued.
func TestQueuedRowsAreSeenByAReadInTheSameApply(t *testing.T) {
	f := openBulk(t, t.TempDir(), raftfsm.Grouping{Delay: time.Hour})
	got := applyAnswers(t, f,
		bulkEntry(1, bulkCmd{Op: "log", K: "a", N: 5}),
		bulkEntry(2, bulkCmd{Op: "count"}),
		bulkEntry(3, bulkCmd{Op: "read", K: "a", N: 2}))
	if got[1] != "[1,0,0]" || got[2] != "[7,7,7]" {
		t.Fatalf("answers %q; want the counter at 1 and the read to see 7 log rows (ids 1..7) and 7 notes", got)
	}
	rows, stmts := f.QueueStats()
	if rows != 14 || stmts != 6 {
		// 7 rows each, written by the two reads (each naming one
		// table) as 4+2+1; the counter's statements flushed nothing.
		t.Fatalf("queue: %d rows in %d statements before the commit, want 14 in 6", rows, stmts)
	}
	applyAnswers(t, f, bulkEntry(4, bulkCmd{Op: "log", K: "b", N: 40}))
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	rows, stmts = f.QueueStats()
	// 40 more each: 32+8 per table.
	if rows != 94 || stmts != 10 {
		t.Fatalf("queue: %d rows in %d statements after the commit, want 94 in 10", rows, stmts)
	}
	if n := rowsOf(t, f, `SELECT count(*) FROM log`); n != 47 {
		t.Fatalf("%d log rows committed, want 47", n)
	}
	// A DELETE that names the table finds the queued rows; the bare
	// transaction sees them after FlushQueued; a schema change writes
	// them first.
	got = applyAnswers(t, f,
		bulkEntry(5, bulkCmd{Op: "log", K: "c", N: 3}),
		bulkEntry(6, bulkCmd{Op: "del", K: "c"}),
		bulkEntry(7, bulkCmd{Op: "bare", K: "d", N: 2}),
		bulkEntry(8, bulkCmd{Op: "ddl", K: "extra", N: 1}))
	if got[1] != "[3,0,0]" || got[2] != "[49,52,0]" || got[3] != "[50,0,0]" {
		t.Fatalf("answers %q; want the delete to remove 3 queued rows, the bare read to see 49 rows up to id 52, the DDL 50", got)
	}
}

// The same commands give the same tables, row by row with their rowids
// and AUTOINCREMENT numbers, and the same answers, whether rows are
// queued (under any grouping) or each written at once.
func TestQueuedRowsGiveTheSameContentsAsImmediateWrites(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 9))
	var logs []*raft.Log
	for i := uint64(1); i <= 300; i++ {
		ops := []string{"log", "log", "log", "read", "del", "count", "bare", "set", "set", "lvl", "lvlread"}
		c := bulkCmd{Op: ops[rng.IntN(len(ops))], K: fmt.Sprintf("k%d", rng.IntN(6)), N: rng.IntN(45)}
		logs = append(logs, bulkEntry(i, c))
	}
	run := func(g raftfsm.Grouping) (string, []string) {
		f := openBulk(t, t.TempDir(), g)
		var answers []string
		brng := rand.New(rand.NewPCG(7, uint64(g.Entries)))
		for i := 0; i < len(logs); {
			n := 1 + brng.IntN(6)
			answers = append(answers, applyAnswers(t, f, logs[i:min(i+n, len(logs))]...)...)
			i += n
		}
		return string(dump(t, f)), answers
	}
	wantDump, wantAnswers := run(raftfsm.Grouping{Immediate: true})
	if !strings.Contains(wantDump, "notes") {
		t.Fatal("the dump holds no notes table")
	}
	for _, g := range []raftfsm.Grouping{{}, {Delay: time.Hour, Entries: 5}, {Delay: time.Hour, Entries: 1000}} {
		gotDump, gotAnswers := run(g)
		if gotDump != wantDump {
			t.Fatalf("grouping %+v: the queued replica's tables differ from the immediate one's", g)
		}
		if fmt.Sprint(gotAnswers) != fmt.Sprint(wantAnswers) {
			t.Fatalf("grouping %+v: answers differ:\n%v\n%v", g, gotAnswers, wantAnswers)
		}
	}
}

// A group dropped by a restore drops its queued rows: the next commit
// holds only what was applied after it.
func TestAbortDropsQueuedRows(t *testing.T) {
	src := openBulk(t, t.TempDir(), raftfsm.Grouping{})
	applyAnswers(t, src, bulkEntry(1, bulkCmd{Op: "log", K: "a", N: 2}))
	var b bytes.Buffer
	if err := src.WriteSnapshot(&b); err != nil {
		t.Fatal(err)
	}

	f := openBulk(t, t.TempDir(), raftfsm.Grouping{Delay: time.Hour})
	applyAnswers(t, f, bulkEntry(1, bulkCmd{Op: "log", K: "x", N: 9}))
	if err := f.Restore(io.NopCloser(&b)); err != nil {
		t.Fatal(err)
	}
	applyAnswers(t, f, bulkEntry(2, bulkCmd{Op: "log", K: "b", N: 3}))
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	applyAnswers(t, src, bulkEntry(2, bulkCmd{Op: "log", K: "b", N: 3}))
	if n := rowsOf(t, f, `SELECT count(*) FROM log WHERE k = 'x'`); n != 0 {
		t.Fatalf("%d rows of the dropped group were written", n)
	}
	if got, want := dump(t, f), dump(t, src); !bytes.Equal(got, want) {
		t.Fatalf("after the restore the replicas differ:\n%s\n---\n%s", got, want)
	}
}

// A crash before the group's commit (the files copied as they are while
// the group is open, some of its rows already written into its
// transaction by a read and others still queued) leaves the last commit
// whole and nothing of the group; applying the group's entries again
// gives what the live node commits.
func TestCrashBeforeCommitLeavesNoQueuedRow(t *testing.T) {
	dir := t.TempDir()
	f := openBulk(t, dir, raftfsm.Grouping{Delay: time.Hour})
	applyAnswers(t, f, bulkEntry(1, bulkCmd{Op: "log", K: "a", N: 4}))
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	group := []*raft.Log{
		bulkEntry(2, bulkCmd{Op: "log", K: "b", N: 300}),
		bulkEntry(3, bulkCmd{Op: "read", K: "b", N: 1}),
		bulkEntry(4, bulkCmd{Op: "log", K: "c", N: 5}),
	}
	applyAnswers(t, f, group...)
	if f.Applied() != 1 || f.Handled() != 4 {
		t.Fatalf("applied %d handled %d, want 1 and 4 (the group open)", f.Applied(), f.Handled())
	}
	crashed := t.TempDir()
	for _, name := range []string{"fsm.bolt", "domain.sqlite", "domain.sqlite-wal"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			if name == "domain.sqlite-wal" && os.IsNotExist(err) {
				continue
			}
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(crashed, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	g := openBulk(t, crashed, raftfsm.Grouping{})
	if ok, err := g.Consistent(); err != nil || !ok {
		t.Fatalf("after the crash the files disagree (%v, %v)", ok, err)
	}
	if g.Applied() != 1 || rowsOf(t, g, `SELECT count(*) FROM log`) != 4 || rowsOf(t, g, `SELECT count(*) FROM notes`) != 4 {
		t.Fatalf("after the crash: applied %d, %d log rows, %d notes; want 1, 4, 4",
			g.Applied(), rowsOf(t, g, `SELECT count(*) FROM log`), rowsOf(t, g, `SELECT count(*) FROM notes`))
	}
	applyAnswers(t, g, group...)
	if got, want := dump(t, g), dump(t, f); !bytes.Equal(got, want) {
		t.Fatal("the group applied again after the crash differs from the live node's")
	}
}

// QueueInsert refuses a row whose width differs from the first row of
// its table and columns (a domain bug) and a table name that is not an
// identifier, and keeps a copy of a blob it queues.
func TestQueueInsertRefusesAnotherWidth(t *testing.T) {
	reg := raftfsm.NewRegistry()
	reg.Register(cmdBulk, "test.bulk", func(ctx *raftfsm.ApplyContext, p []byte) ([]byte, error) {
		q := ctx.DB.(queuer)
		if err := q.QueueInsert("log", logCols, "k", "v", int64(1)); err != nil {
			return nil, err
		}
		if err := q.QueueInsert("log", logCols, "k", "v"); err == nil {
			return nil, fmt.Errorf("a row of 2 values was queued beside one of 3")
		}
		if err := q.QueueInsert("log; DROP TABLE log", logCols, "k", "v", int64(1)); err == nil {
			return nil, fmt.Errorf("a table name that is not an identifier was queued")
		}
		// A caller may reuse a slice it queued: the row keeps the value
		// it had when queued.
		blob := []byte("before")
		if err := q.QueueInsert("notes", notesCols, "k", blob); err != nil {
			return nil, err
		}
		copy(blob, "after!")
		var got []byte
		if err := ctx.DB.QueryRow(`SELECT b FROM notes`).Scan(&got); err != nil {
			return nil, err
		}
		if string(got) != "before" {
			return nil, fmt.Errorf("the queued blob reads %q, want %q", got, "before")
		}
		return nil, nil
	})
	f, err := raftfsm.Open(raftfsm.Options{Dir: t.TempDir(), Registry: reg, Migrate: bulkMigrate})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if r := resp(t, f.ApplyBatch([]*raft.Log{bulkEntry(1, bulkCmd{})})[0]); r.Err != nil {
		t.Fatal(r.Err)
	}
	if n := rowsOf(t, f, `SELECT count(*) FROM log`); n != 1 {
		t.Fatalf("%d rows, want 1", n)
	}
}

// A queued set keeps the newest value per key and is written under the
// queued rows' rules: a statement naming its table (a read, an UPDATE)
// sees it, a schema change and FlushQueued write it for the bare
// transaction, a statement naming another table leaves it queued, and the
// group's commit writes it; a restore's abort drops it; with queueing off
// it is written at once.
func TestQueuedSetsKeepTheNewestValueUnderTheFlushRules(t *testing.T) {
	levels := func(f *raftfsm.FSM) string {
		t.Helper()
		var out string
		if err := f.Query(func(db *sql.DB) error {
			return db.QueryRow(`SELECT group_concat(k || '=' || n, ' ') FROM (SELECT k, n FROM levels WHERE k IN ('a', 'b', 'c') ORDER BY k)`).Scan(&out)
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	f := openBulk(t, t.TempDir(), raftfsm.Grouping{Delay: time.Hour})
	got := applyAnswers(t, f,
		stepsEntry(1, setStep{"set", "a", 1}, setStep{"set", "b", 2}, setStep{"set", "a", 3}, setStep{Op: "other"}, setStep{"bare", "a", 0}),
		stepsEntry(2, setStep{"read", "a", 0}, setStep{"set", "a", 4}, setStep{"add", "a", 10}, setStep{"read", "a", 0}),
		stepsEntry(3, setStep{"set", "c", 5}, setStep{Op: "ddl"}, setStep{"bare", "c", 0}),
		stepsEntry(4, setStep{"set", "b", 7}, setStep{Op: "flush"}, setStep{"bare", "b", 0}),
		stepsEntry(5, setStep{"set", "a", 30}, setStep{"set", "b", 8}, setStep{"set", "b", 9}))
	want := []string{"[0]", "[3,14]", "[5]", "[7]", "null"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("answers %v, want %v: the newest value, seen by a statement naming the table, a schema change or FlushQueued, unseen by the bare transaction before", got, want)
	}
	if rows, stmts := f.QueueStats(); rows != 9 || stmts != 5 {
		// a and b by entry 2's read, a by its add, c by the DDL, b by
		// the flush; entry 5's a and b still queued.
		t.Fatalf("queue: %d values in %d statements before the commit, want 9 in 5", rows, stmts)
	}
	if got := levels(f); got != "a=0 b=0 c=0" {
		t.Fatalf("before the commit the files hold %q, want nothing of the open group", got)
	}
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := levels(f); got != "a=30 b=9 c=5" {
		t.Fatalf("after the commit the files hold %q, want a=30 b=9 c=5", got)
	}
	if _, stmts := f.QueueStats(); stmts != 7 {
		t.Fatalf("%d statements after the commit, want 7 (one per key)", stmts)
	}

	// A restore drops the open group's queued values.
	var snap bytes.Buffer
	if err := f.WriteSnapshot(&snap); err != nil {
		t.Fatal(err)
	}
	applyAnswers(t, f, stepsEntry(6, setStep{"set", "a", 99}))
	if err := f.Restore(io.NopCloser(&snap)); err != nil {
		t.Fatal(err)
	}
	applyAnswers(t, f, stepsEntry(6, setStep{"set", "c", 6}))
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := levels(f); got != "a=30 b=9 c=6" {
		t.Fatalf("after the restore the files hold %q, want a=30 b=9 c=6 (the dropped group's a=99 gone)", got)
	}

	// Queueing off: written at once, seen by the bare transaction.
	g := openBulk(t, t.TempDir(), raftfsm.Grouping{Delay: time.Hour, Immediate: true})
	got = applyAnswers(t, g, stepsEntry(1, setStep{"set", "a", 2}, setStep{"bare", "a", 0}, setStep{"set", "a", 3}, setStep{"bare", "a", 0}))
	if got[0] != "[2,3]" {
		t.Fatalf("immediate: the bare transaction read %s, want [2,3]", got[0])
	}
	if rows, stmts := g.QueueStats(); rows != 0 || stmts != 0 {
		t.Fatalf("immediate: %d values queued in %d statements", rows, stmts)
	}
}

// QueueSet refuses names that are not identifiers and keys that are
// neither strings nor int64s, or not of the set's first key's type.
func TestQueueSetRefusesOddNamesAndKeys(t *testing.T) {
	reg := raftfsm.NewRegistry()
	reg.Register(cmdSetSteps, "test.setSteps", func(ctx *raftfsm.ApplyContext, p []byte) ([]byte, error) {
		q := ctx.DB.(queuer)
		for _, bad := range []struct {
			table, key, val string
			k               any
		}{
			{"levels; DROP TABLE levels", "k", "n", "a"},
			{"levels", "k = k OR 1", "n", "a"},
			{"levels", "k", "n = 0,", "a"},
			{"levels", "k", "n", 1.5},
			{"levels", "k", "n", []byte("a")},
		} {
			if err := q.QueueSet(bad.table, bad.key, bad.val, bad.k, 1); err == nil {
				return nil, fmt.Errorf("QueueSet(%q, %q, %q, %v) was queued", bad.table, bad.key, bad.val, bad.k)
			}
		}
		if err := q.QueueSet("levels", "k", "n", "a", 1); err != nil {
			return nil, err
		}
		if err := q.QueueSet("levels", "k", "n", 7, 1); err == nil {
			return nil, fmt.Errorf("an int key was queued beside a string key")
		}
		return nil, nil
	})
	f, err := raftfsm.Open(raftfsm.Options{Dir: t.TempDir(), Registry: reg, Migrate: bulkMigrate})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if r := resp(t, f.ApplyBatch([]*raft.Log{stepsEntry(1)})[0]); r.Err != nil {
		t.Fatal(r.Err)
	}
	if n := rowsOf(t, f, `SELECT n FROM levels WHERE k = 'a'`); n != 1 {
		t.Fatalf("a = %d, want 1", n)
	}
}

// What the queue saves per row: entries that each insert one row into
// two tables (as an order's audit and outbox rows), in Raft batches of
// 8 and groups of 256 entries, queued or one statement per row.
func BenchmarkQueuedRows(b *testing.B) {
	for _, mode := range []struct {
		name string
		g    raftfsm.Grouping
	}{
		{"queued", raftfsm.Grouping{Delay: time.Hour, Entries: 256}},
		{"immediate", raftfsm.Grouping{Delay: time.Hour, Entries: 256, Immediate: true}},
	} {
		b.Run(mode.name, func(b *testing.B) {
			f, err := raftfsm.Open(raftfsm.Options{Dir: b.TempDir(), Registry: bulkRegistry(), Migrate: bulkMigrate, Grouping: mode.g})
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			logs := make([]*raft.Log, b.N)
			for i := range logs {
				logs[i] = bulkEntry(uint64(i+1), bulkCmd{Op: "log", K: "k", N: 1})
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += 8 {
				f.ApplyBatch(logs[i:min(i+8, b.N)])
			}
			if err := f.Flush(); err != nil {
				b.Fatal(err)
			}
		})
	}
}
