package raftfsm_test

import (
	"bytes"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
	bolt "go.etcd.io/bbolt"

	"masterorder/kv"
	"masterorder/raftfsm"
)

// Test commands: cmdSet writes a key to bolt and a row to SQLite; cmdCount
// increments a counter (so a double apply shows); cmdFail is a handler
// that fails (a disk error, say).
const (
	cmdSet   raftfsm.CommandType = 40
	cmdCount raftfsm.CommandType = 41
	cmdFail  raftfsm.CommandType = 42
	cmdEmit  raftfsm.CommandType = 43
	cmdNew   raftfsm.CommandType = 99 // a type from a newer version
)

var testBucket = []byte("test")

type setCmd struct {
	K string `json:"k"`
	V string `json:"v"`
}

func testRegistry() *raftfsm.Registry {
	reg := raftfsm.NewRegistry()
	kv.Register(reg)
	reg.Register(cmdSet, "test.set", func(ctx *raftfsm.ApplyContext, p []byte) ([]byte, error) {
		var c setCmd
		if err := json.Unmarshal(p, &c); err != nil {
			return []byte(`{"error":"malformed"}`), nil
		}
		b, err := ctx.Bolt.CreateBucketIfNotExists(testBucket)
		if err != nil {
			return nil, err
		}
		if err := b.Put([]byte(c.K), []byte(c.V)); err != nil {
			return nil, err
		}
		// Every value type the dump knows: text, integer, real, blob, NULL.
		var f, blob any
		if c.V != "" {
			f, blob = float64(len(c.V))/3, []byte(c.V)
		}
		if _, err := ctx.SQL.Exec(`INSERT INTO items(k, v, at, idx, f, b) VALUES(?,?,?,?,?,?) ON CONFLICT(k) DO UPDATE SET v=excluded.v, at=excluded.at, idx=excluded.idx, f=excluded.f, b=excluded.b`,
			c.K, c.V, ctx.Now, int64(ctx.Index), f, blob); err != nil {
			return nil, err
		}
		return json.Marshal(map[string]int64{"now": ctx.Now})
	})
	reg.Register(cmdCount, "test.count", func(ctx *raftfsm.ApplyContext, p []byte) ([]byte, error) {
		_, err := ctx.SQL.Exec(`UPDATE counter SET n = n + 1`)
		return nil, err
	})
	reg.Register(cmdFail, "test.fail", func(ctx *raftfsm.ApplyContext, p []byte) ([]byte, error) {
		return nil, errors.New("disk on fire")
	})
	reg.Register(cmdEmit, "test.emit", func(ctx *raftfsm.ApplyContext, p []byte) ([]byte, error) {
		ctx.Emit("thing", p)
		return nil, nil
	})
	return reg
}

func migrate(tx *sql.Tx) error {
	for _, s := range []string{
		`CREATE TABLE IF NOT EXISTS items (k TEXT PRIMARY KEY, v TEXT NOT NULL, at INTEGER NOT NULL, idx INTEGER NOT NULL, f REAL, b BLOB)`,
		`CREATE INDEX IF NOT EXISTS items_by_v ON items(v)`,
		`CREATE TABLE IF NOT EXISTS counter (n INTEGER NOT NULL)`,
		`INSERT INTO counter(n) SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM counter)`,
	} {
		if _, err := tx.Exec(s); err != nil {
			return err
		}
	}
	return nil
}

func openFSM(t *testing.T, dir string) *raftfsm.FSM {
	t.Helper()
	f, err := raftfsm.Open(raftfsm.Options{Dir: dir, Registry: testRegistry(), Migrate: migrate})
	if err != nil {
		t.Fatalf("open fsm: %v", err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func entry(index uint64, c raftfsm.Command) *raft.Log {
	return &raft.Log{Index: index, Term: 1, Type: raft.LogCommand, Data: c.Encode()}
}

func setEntry(index uint64, now int64, k, v string) *raft.Log {
	p, _ := json.Marshal(setCmd{K: k, V: v})
	return entry(index, raftfsm.Command{Type: cmdSet, Version: 1, FSMTime: now, WallTime: now + 7, Payload: p})
}

func resp(t *testing.T, x interface{}) raftfsm.Response {
	t.Helper()
	r, ok := x.(raftfsm.Response)
	if !ok {
		t.Fatalf("response is %T, want raftfsm.Response", x)
	}
	return r
}

func dump(t *testing.T, f *raftfsm.FSM) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := f.Dump(&b); err != nil {
		t.Fatalf("dump: %v", err)
	}
	return b.Bytes()
}

func counter(t *testing.T, f *raftfsm.FSM) int {
	t.Helper()
	var n int
	if err := f.Query(func(db *sql.DB) error { return db.QueryRow(`SELECT n FROM counter`).Scan(&n) }); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestEnvelopeRoundTrip(t *testing.T) {
	for _, c := range []raftfsm.Command{
		{Type: 1, Version: 1},
		{Type: 35, Version: 3, Flags: raftfsm.FlagIgnorable, FSMTime: 1_700_000_000_123, WallTime: -5, Payload: []byte(`{"a":1}`)},
		{Type: 255, Version: 255, Flags: 0xff, FSMTime: 1<<63 - 1, WallTime: 1<<63 - 1, Payload: bytes.Repeat([]byte{0}, 1000)},
	} {
		got, err := raftfsm.Decode(c.Encode())
		if err != nil {
			t.Fatalf("decode(encode(%+v)): %v", c, err)
		}
		if got.Type != c.Type || got.Version != c.Version || got.Flags != c.Flags || got.FSMTime != c.FSMTime ||
			got.WallTime != c.WallTime || !bytes.Equal(got.Payload, c.Payload) {
			t.Fatalf("round trip: got %+v, want %+v", got, c)
		}
	}
}

func TestDecodeRejectsCorruptEnvelopes(t *testing.T) {
	good := raftfsm.Command{Type: cmdSet, Version: 1, FSMTime: 10, Payload: []byte("xy")}.Encode()
	wrongFormat := append([]byte(nil), good...)
	wrongFormat[0] = 2
	negative := append([]byte(nil), good...)
	binary.BigEndian.PutUint64(negative[4:], 1<<63)
	cases := map[string][]byte{
		"empty":        nil,
		"one byte":     {1},
		"truncated":    good[:19],
		"wrong format": wrongFormat,
		"format zero":  append([]byte{0}, good[1:]...),
		"negative now": negative,
	}
	for name, b := range cases {
		if _, err := raftfsm.Decode(b); !errors.Is(err, raftfsm.ErrBadCommand) {
			t.Errorf("%s: Decode error = %v, want ErrBadCommand", name, err)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(raftfsm.Command{Type: 1, Version: 1, FSMTime: 5, Payload: []byte("{}")}.Encode())
	f.Add([]byte{})
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := raftfsm.Decode(b)
		if err != nil {
			return
		}
		again, err := raftfsm.Decode(c.Encode())
		if err != nil || again.Type != c.Type || again.FSMTime != c.FSMTime || !bytes.Equal(again.Payload, c.Payload) {
			t.Fatalf("re-encode of a decoded command differs: %+v vs %+v (%v)", again, c, err)
		}
	})
}

// A corrupt entry is answered with an error result; the FSM goes on
// applying (the index advances) and never panics.
func TestCorruptEntriesAnswerErrorsAndDoNotHalt(t *testing.T) {
	f := openFSM(t, t.TempDir())
	rng := rand.New(rand.NewPCG(1, 2))
	good := setEntry(0, 100, "k", "v").Data
	var logs []*raft.Log
	add := func(data []byte) {
		logs = append(logs, &raft.Log{Index: uint64(len(logs) + 1), Type: raft.LogCommand, Data: data})
	}
	add(nil)
	add(good[:5])              // truncated header
	for i := 0; i < 200; i++ { // random format-1 headers cut short
		b := make([]byte, rng.IntN(20))
		for j := range b {
			b[j] = byte(rng.UintN(256))
		}
		if len(b) > 0 {
			b[0] = 1
		}
		add(b)
	}
	nBad := len(logs)
	// Well-formed envelopes of known types with garbage payloads: handlers
	// answer an error result, they do not fail the FSM.
	for i := 0; i < 200; i++ {
		p := make([]byte, rng.IntN(64))
		for j := range p {
			p[j] = byte(rng.UintN(256))
		}
		typ := []raftfsm.CommandType{kv.CmdOp, cmdSet}[i%2]
		add(raftfsm.Command{Type: typ, Version: 1, FSMTime: 100, Payload: p}.Encode())
	}
	var out []interface{}
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Fatalf("ApplyBatch panicked on corrupt input: %v", p)
			}
		}()
		out = f.ApplyBatch(logs)
	}()
	if len(out) != len(logs) {
		t.Fatalf("%d responses for %d entries", len(out), len(logs))
	}
	for i := 0; i < nBad; i++ {
		if r := resp(t, out[i]); !errors.Is(r.Err, raftfsm.ErrBadCommand) {
			t.Fatalf("entry %d (%x): err = %v, want ErrBadCommand", i+1, logs[i].Data, r.Err)
		}
	}
	for i := nBad; i < len(out); i++ {
		r := resp(t, out[i])
		if r.Err != nil {
			t.Fatalf("entry %d: handler error %v for a garbage payload (want an error result)", i+1, r.Err)
		}
		if !bytes.Contains(r.Data, []byte(`"error"`)) {
			t.Fatalf("entry %d: result %s for a garbage payload, want an error result", i+1, r.Data)
		}
	}
	if err := f.Halted(); err != nil {
		t.Fatalf("FSM halted on corrupt entries: %v", err)
	}
	if got := f.Applied(); got != uint64(len(logs)) {
		t.Fatalf("applied = %d, want %d", got, len(logs))
	}
	// And it still applies good commands.
	r := resp(t, f.Apply(setEntry(uint64(len(logs)+1), 200, "after", "ok")))
	if r.Err != nil {
		t.Fatalf("good command after corrupt ones: %v", r.Err)
	}
}

func TestUnknownCommandHaltsTheFSM(t *testing.T) {
	f := openFSM(t, t.TempDir())
	if r := resp(t, f.Apply(setEntry(1, 100, "a", "1"))); r.Err != nil {
		t.Fatal(r.Err)
	}
	before := dump(t, f)
	out := f.ApplyBatch([]*raft.Log{
		setEntry(2, 110, "b", "2"), // same batch as the unknown one: not committed either
		entry(3, raftfsm.Command{Type: cmdNew, Version: 1, FSMTime: 120, Payload: []byte("{}")}),
		setEntry(4, 130, "c", "3"),
	})
	for i, x := range out {
		if r := resp(t, x); !errors.Is(r.Err, raftfsm.ErrHalted) {
			t.Fatalf("response %d: err = %v, want ErrHalted", i, r.Err)
		}
	}
	if err := f.Halted(); err == nil || !strings.Contains(err.Error(), "unknown") {
		t.Fatalf("Halted() = %v, want the unknown-type reason", err)
	}
	if f.Applied() != 1 {
		t.Fatalf("applied moved to %d past an unknown command", f.Applied())
	}
	if !bytes.Equal(before, dump(t, f)) {
		t.Fatal("files changed by a batch that halted")
	}
	// Later entries are refused too, and waiters are released.
	if r := resp(t, f.Apply(setEntry(5, 140, "d", "4"))); !errors.Is(r.Err, raftfsm.ErrHalted) {
		t.Fatalf("apply after halt: %v", r.Err)
	}
	if err := f.WaitApplied(t.Context(), 5); !errors.Is(err, raftfsm.ErrHalted) {
		t.Fatalf("WaitApplied after halt = %v, want ErrHalted", err)
	}
	// No snapshot of files that lag what Raft would label it with.
	if _, err := f.Snapshot(); !errors.Is(err, raftfsm.ErrHalted) {
		t.Fatalf("Snapshot of a halted FSM = %v, want ErrHalted", err)
	}
	if err := f.WriteSnapshot(&bytes.Buffer{}); err == nil {
		t.Fatal("WriteSnapshot of a halted FSM succeeded")
	}
}

// Mixed versions: an envelope laid out by a newer build, or a command
// version newer than its handler knows, halts the node (with a reason that
// says to upgrade it) instead of being skipped or applied the old way.
func TestNewerEnvelopeOrVersionHaltsTheFSM(t *testing.T) {
	newerFormat := setEntry(2, 110, "b", "2")
	newerFormat.Data = append([]byte{2}, newerFormat.Data[1:]...)
	newerVersion := entry(2, raftfsm.Command{Type: cmdSet, Version: 2, FSMTime: 110, Payload: []byte(`{"k":"b","v":"2"}`)})
	for name, l := range map[string]*raft.Log{"newer envelope format": newerFormat, "newer command version": newerVersion} {
		t.Run(name, func(t *testing.T) {
			f := openFSM(t, t.TempDir())
			if r := resp(t, f.Apply(setEntry(1, 100, "a", "1"))); r.Err != nil {
				t.Fatal(r.Err)
			}
			before := dump(t, f)
			if r := resp(t, f.Apply(l)); !errors.Is(r.Err, raftfsm.ErrHalted) {
				t.Fatalf("err = %v, want ErrHalted", r.Err)
			}
			if err := f.Halted(); err == nil || !strings.Contains(err.Error(), "upgrade this node") {
				t.Fatalf("Halted() = %v, want a reason naming the upgrade", err)
			}
			if f.Applied() != 1 || !bytes.Equal(before, dump(t, f)) {
				t.Fatalf("files changed past an entry this node cannot apply (applied %d)", f.Applied())
			}
		})
	}
}

// A handler registered for two versions applies both; the registry says
// which types it has.
func TestRegistryVersionsAndHas(t *testing.T) {
	reg := raftfsm.NewRegistry()
	reg.RegisterVersions(cmdSet, "test.set2", 2, func(ctx *raftfsm.ApplyContext, p []byte) ([]byte, error) {
		return []byte{'0' + ctx.Version}, nil
	})
	if !reg.Has(cmdSet) || reg.Has(cmdNew) || reg.MaxVersion(cmdSet) != 2 || reg.MaxVersion(cmdNew) != 0 {
		t.Fatalf("Has/MaxVersion wrong: %v %v %d %d", reg.Has(cmdSet), reg.Has(cmdNew), reg.MaxVersion(cmdSet), reg.MaxVersion(cmdNew))
	}
	f, err := raftfsm.Open(raftfsm.Options{Dir: t.TempDir(), Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i, v := range []uint8{1, 2} {
		r := resp(t, f.Apply(entry(uint64(i+1), raftfsm.Command{Type: cmdSet, Version: v, FSMTime: 1})))
		if r.Err != nil || string(r.Data) != string(rune('0'+v)) {
			t.Fatalf("version %d: %q %v", v, r.Data, r.Err)
		}
	}
}

func TestHandlerErrorHaltsTheFSM(t *testing.T) {
	f := openFSM(t, t.TempDir())
	r := resp(t, f.Apply(entry(1, raftfsm.Command{Type: cmdFail, Version: 1, FSMTime: 1})))
	if !errors.Is(r.Err, raftfsm.ErrHalted) || f.Halted() == nil {
		t.Fatalf("handler error: response %v, halted %v", r.Err, f.Halted())
	}
}

func TestIgnorableUnknownCommandIsSkipped(t *testing.T) {
	f := openFSM(t, t.TempDir())
	out := f.ApplyBatch([]*raft.Log{
		setEntry(1, 100, "a", "1"),
		entry(2, raftfsm.Command{Type: cmdNew, Version: 1, Flags: raftfsm.FlagIgnorable, FSMTime: 150, Payload: []byte("hint")}),
		setEntry(3, 120, "b", "2"),
	})
	if r := resp(t, out[1]); !errors.Is(r.Err, raftfsm.ErrUnknownCommand) {
		t.Fatalf("ignorable unknown: err = %v, want ErrUnknownCommand", r.Err)
	}
	for _, i := range []int{0, 2} {
		if r := resp(t, out[i]); r.Err != nil {
			t.Fatalf("entry %d: %v", i+1, r.Err)
		}
	}
	if f.Halted() != nil || f.Applied() != 3 {
		t.Fatalf("halted %v, applied %d; want running at 3", f.Halted(), f.Applied())
	}
	// FSM time is max(previous, stamped): the skipped command's stamp
	// still counts, and a lower stamp later does not move it back.
	if f.Now() != 150 {
		t.Fatalf("fsm now = %d, want 150", f.Now())
	}
	var at int64
	f.Query(func(db *sql.DB) error { return db.QueryRow(`SELECT at FROM items WHERE k='b'`).Scan(&at) })
	if at != 150 {
		t.Fatalf("handler saw now = %d, want 150 (time must not run backwards)", at)
	}
}

func TestApplyBatchSkipsAppliedIndexes(t *testing.T) {
	dir := t.TempDir()
	f := openFSM(t, dir)
	count := func(i uint64) *raft.Log {
		return entry(i, raftfsm.Command{Type: cmdCount, Version: 1, FSMTime: int64(i)})
	}
	f.ApplyBatch([]*raft.Log{count(1), count(2), count(3)})
	if n := counter(t, f); n != 3 {
		t.Fatalf("counter = %d, want 3", n)
	}
	// Raft replays entries after a restart without restore.
	out := f.ApplyBatch([]*raft.Log{count(2), count(3), count(4)})
	for _, i := range []int{0, 1} {
		if r := resp(t, out[i]); r.Err == nil {
			t.Fatalf("replayed entry %d answered no error", i+2)
		}
	}
	if r := resp(t, out[2]); r.Err != nil {
		t.Fatal(r.Err)
	}
	if n := counter(t, f); n != 4 || f.Applied() != 4 {
		t.Fatalf("counter = %d applied = %d, want 4 and 4", n, f.Applied())
	}
	// A whole batch of old entries changes nothing.
	f.ApplyBatch([]*raft.Log{count(1), count(4)})
	if n := counter(t, f); n != 4 {
		t.Fatalf("counter = %d after replaying old entries, want 4", n)
	}
	// The applied index survives a reopen (the files are persistent).
	f.Close()
	f2 := openFSM(t, dir)
	if f2.Applied() != 4 || f2.Now() != 4 {
		t.Fatalf("after reopen: applied %d now %d, want 4 and 4", f2.Applied(), f2.Now())
	}
	if ok, err := f2.Consistent(); !ok || err != nil {
		t.Fatalf("Consistent after reopen = %v, %v", ok, err)
	}
}

func TestNonCommandEntriesAdvanceTheIndex(t *testing.T) {
	f := openFSM(t, t.TempDir())
	out := f.ApplyBatch([]*raft.Log{
		{Index: 1, Type: raft.LogConfiguration, Data: []byte("whatever")},
		setEntry(2, 5, "a", "b"),
	})
	if r := resp(t, out[0]); r.Err != nil {
		t.Fatal(r.Err)
	}
	if f.Applied() != 2 {
		t.Fatalf("applied = %d", f.Applied())
	}
}

func TestEventsPublishedAfterCommit(t *testing.T) {
	f := openFSM(t, t.TempDir())
	var got []raftfsm.Event
	f.SetListener(func(ev []raftfsm.Event) { got = append(got, ev...) })
	f.ApplyBatch([]*raft.Log{
		entry(1, raftfsm.Command{Type: cmdEmit, Version: 1, FSMTime: 1, Payload: []byte("x")}),
		setEntry(2, 2, "k", "v"),
		entry(3, raftfsm.Command{Type: cmdEmit, Version: 1, FSMTime: 3, Payload: []byte("y")}),
	})
	if len(got) != 2 || got[0].Index != 1 || string(got[0].Data) != "x" || got[1].Index != 3 {
		t.Fatalf("events = %+v", got)
	}
}

func fill(t *testing.T, f *raftfsm.FSM, from, to uint64) {
	t.Helper()
	var logs []*raft.Log
	for i := from; i <= to; i++ {
		logs = append(logs, setEntry(i, int64(1000+i), "key-"+strconv.FormatUint(i%97, 10), strings.Repeat("v", int(i%50))))
	}
	for _, x := range f.ApplyBatch(logs) {
		if r := resp(t, x); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	// Some KV state as well, with TTLs.
	p, _ := json.Marshal(map[string]any{"op": "setIfAbsent", "key": "lock:" + strconv.FormatUint(to, 10), "value": []byte("tok"), "ttlMs": 60000})
	f.Apply(entry(to+1, raftfsm.Command{Type: kv.CmdOp, Version: 1, FSMTime: int64(1000 + to), Payload: p}))
}

type memSink struct {
	bytes.Buffer
	cancelled bool
}

func (s *memSink) ID() string    { return "mem" }
func (s *memSink) Cancel() error { s.cancelled = true; return nil }
func (s *memSink) Close() error  { return nil }

func TestSnapshotRestoreGivesIdenticalDump(t *testing.T) {
	src := openFSM(t, t.TempDir())
	fill(t, src, 1, 300)
	src.Apply(setEntry(302, 2000, "empty", ""))
	snap, err := src.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	// Writes after the snapshot point are not in it (MVCC read).
	want := dump(t, src)
	fill(t, src, 303, 310)
	var sink memSink
	if err := snap.Persist(&sink); err != nil {
		t.Fatal(err)
	}
	snap.Release()
	if sink.cancelled {
		t.Fatal("snapshot sink cancelled")
	}

	dst := openFSM(t, t.TempDir())
	fill(t, dst, 1, 5) // state that the restore must replace
	if err := dst.Restore(ioNopCloser{bytes.NewReader(sink.Bytes())}); err != nil {
		t.Fatalf("restore: %v", err)
	}
	if got := dump(t, dst); !bytes.Equal(got, want) {
		t.Fatalf("restored dump differs (%d vs %d bytes)", len(got), len(want))
	}
	if dst.Applied() != 302 || dst.Now() != 2000 {
		t.Fatalf("restored applied %d now %d, want 302 and 2000", dst.Applied(), dst.Now())
	}
	if ok, err := dst.Consistent(); !ok || err != nil {
		t.Fatalf("restored files inconsistent: %v %v", ok, err)
	}
	// The restored FSM applies the next entries like the source did.
	fill(t, dst, 303, 310)
	if !bytes.Equal(dump(t, dst), dump(t, src)) {
		t.Fatal("source and restored FSM diverge after applying the same entries")
	}
	// WriteSnapshot streams the same format.
	var b bytes.Buffer
	if err := src.WriteSnapshot(&b); err != nil {
		t.Fatal(err)
	}
	third := openFSM(t, t.TempDir())
	if err := third.Restore(ioNopCloser{&b}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(dump(t, third), dump(t, src)) {
		t.Fatal("WriteSnapshot + Restore differs from the source")
	}
}

func TestRestoreRefusesBadSnapshots(t *testing.T) {
	src := openFSM(t, t.TempDir())
	fill(t, src, 1, 20)
	var good bytes.Buffer
	if err := src.WriteSnapshot(&good); err != nil {
		t.Fatal(err)
	}
	dst := openFSM(t, t.TempDir())
	fill(t, dst, 1, 3)
	before := dump(t, dst)
	for name, b := range map[string][]byte{
		"empty":          nil,
		"other format":   append([]byte("MOSNAP9\n"), good.Bytes()[8:]...),
		"truncated bolt": good.Bytes()[:100],
		"truncated sql":  good.Bytes()[:good.Len()-3],
	} {
		if err := dst.Restore(ioNopCloser{bytes.NewReader(b)}); err == nil {
			t.Errorf("%s: restore succeeded", name)
		}
		if !bytes.Equal(before, dump(t, dst)) {
			t.Fatalf("%s: a failed restore changed the files", name)
		}
	}
}

func TestConsistentDetectsDisagreeingFiles(t *testing.T) {
	dir := t.TempDir()
	f := openFSM(t, dir)
	fill(t, f, 1, 10)
	if ok, err := f.Consistent(); !ok || err != nil {
		t.Fatalf("fresh files: Consistent = %v, %v", ok, err)
	}
	f.Close()
	// Simulate a crash between the SQLite and the bbolt commit: SQLite
	// is one batch ahead.
	db, err := sql.Open("sqlite", filepath.Join(dir, "domain.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE _fsm_meta SET v = v + 5 WHERE k='applied'`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	// Open sees it and sets the files aside, so the node rebuilds.
	f2 := openFSM(t, dir)
	if d := f2.Repaired(); d == nil || !strings.Contains(d.Error(), "disagree") {
		t.Fatalf("Repaired = %v; want disagreeing indexes", d)
	}
	if err := f2.Reset(); err != nil {
		t.Fatal(err)
	}
	if ok, err := f2.Consistent(); !ok || err != nil || f2.Applied() != 0 {
		t.Fatalf("after Reset: Consistent %v %v applied %d", ok, err, f2.Applied())
	}
	var n int
	f2.Query(func(db *sql.DB) error { return db.QueryRow(`SELECT count(*) FROM items`).Scan(&n) })
	if n != 0 {
		t.Fatalf("Reset kept %d rows", n)
	}
	f2.View(func(tx *bolt.Tx) error {
		if tx.Bucket(testBucket) != nil {
			t.Fatal("Reset kept the bolt data")
		}
		return nil
	})
	if _, err := os.Stat(filepath.Join(dir, "fsm.bolt")); err != nil {
		t.Fatal(err)
	}
}

type ioNopCloser struct {
	r interface{ Read([]byte) (int, error) }
}

func (c ioNopCloser) Read(b []byte) (int, error) { return c.r.Read(b) }
func (c ioNopCloser) Close() error               { return nil }
