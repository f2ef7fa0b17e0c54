package kv_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	bolt "go.etcd.io/bbolt"

	"masterorder/kv"
	"masterorder/raftfsm"
)

func openBolt(t *testing.T) *bolt.DB {
	t.Helper()
	db, err := bolt.Open(filepath.Join(t.TempDir(), "kv.bolt"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// at runs fn in a writable transaction at FSM time now, as the command
// with Raft index index.
func at(t *testing.T, db *bolt.DB, now int64, index uint64, fn func(tx *kv.Tx)) {
	t.Helper()
	if err := db.Update(func(b *bolt.Tx) error {
		fn(kv.NewTx(b, now, index))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// must(t)(f()) fails the test on f's error and returns its value.
func must[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func TestSetIfAbsentGetHas(t *testing.T) {
	db := openBolt(t)
	at(t, db, 1000, 7, func(tx *kv.Tx) {
		if !must[bool](t)(tx.SetIfAbsent("a", []byte("1"), 500*time.Millisecond)) {
			t.Fatal("first SetIfAbsent refused")
		}
		if must[bool](t)(tx.SetIfAbsent("a", []byte("2"), time.Second)) {
			t.Fatal("second SetIfAbsent on a live key succeeded")
		}
		e, ok := tx.Get("a")
		if !ok || string(e.Value) != "1" || e.ExpiresAt != 1500 || e.Revision != 7 || e.Key != "a" {
			t.Fatalf("Get = %+v %v", e, ok)
		}
		if !must[bool](t)(tx.SetIfAbsent("forever", []byte("x"), 0)) {
			t.Fatal("SetIfAbsent without ttl refused")
		}
		if _, ok := tx.Get("missing"); ok || tx.Has("missing") {
			t.Fatal("missing key is live")
		}
	})
	at(t, db, 1499, 8, func(tx *kv.Tx) {
		if !tx.Has("a") {
			t.Fatal("key gone before its expiry")
		}
	})
	// Expiry is judged on the FSM time of the Tx: at expiresAt the key is
	// invisible at once, before any expire command removed it.
	at(t, db, 1500, 9, func(tx *kv.Tx) {
		if tx.Has("a") {
			t.Fatal("key live at its expiry time")
		}
		if !must[bool](t)(tx.SetIfAbsent("a", []byte("3"), time.Second)) {
			t.Fatal("SetIfAbsent over an expired key refused")
		}
		if e, _ := tx.Get("a"); string(e.Value) != "3" || e.Revision != 9 || e.ExpiresAt != 2500 {
			t.Fatalf("re-set key = %+v", e)
		}
	})
	at(t, db, 1<<50, 10, func(tx *kv.Tx) {
		if !tx.Has("forever") {
			t.Fatal("key without ttl expired")
		}
	})
}

func TestKeyLimits(t *testing.T) {
	db := openBolt(t)
	at(t, db, 1, 1, func(tx *kv.Tx) {
		if _, err := tx.SetIfAbsent("", nil, 0); err == nil {
			t.Fatal("empty key accepted")
		}
		if err := tx.Put(string(bytes.Repeat([]byte("k"), kv.MaxKeyLen+1)), nil, 0); err == nil {
			t.Fatal("oversized key accepted")
		}
		if err := tx.Put(string(bytes.Repeat([]byte("k"), kv.MaxKeyLen)), nil, 0); err != nil {
			t.Fatal(err)
		}
	})
}

func TestDeleteAndCompareAndDelete(t *testing.T) {
	db := openBolt(t)
	at(t, db, 100, 1, func(tx *kv.Tx) {
		tx.Put("a", []byte("x"), 0)
		tx.Put("b", []byte("tok"), 0)
		tx.Put("c", []byte("tok"), 10*time.Millisecond)
		tx.Put("d", []byte("v"), 10*time.Millisecond)
	})
	at(t, db, 200, 2, func(tx *kv.Tx) {
		if !must[bool](t)(tx.Delete("a")) {
			t.Fatal("Delete of a live key answered false")
		}
		if must[bool](t)(tx.Delete("a")) || must[bool](t)(tx.Delete("never")) {
			t.Fatal("Delete of a missing key answered true")
		}
		if must[bool](t)(tx.CompareAndDelete("b", []byte("other"))) || !tx.Has("b") {
			t.Fatal("CompareAndDelete with the wrong value deleted")
		}
		if !must[bool](t)(tx.CompareAndDelete("b", []byte("tok"))) || tx.Has("b") {
			t.Fatal("CompareAndDelete with the right value did not delete")
		}
		// c expired at 110: its holder must not release it any more.
		if must[bool](t)(tx.CompareAndDelete("c", []byte("tok"))) {
			t.Fatal("CompareAndDelete matched an expired key")
		}
		// Delete of an expired key removes it but reports it was not live.
		if must[bool](t)(tx.Delete("d")) {
			t.Fatal("Delete of an expired key answered true")
		}
	})
	db.View(func(b *bolt.Tx) error {
		if kv.Due(b, 1<<60) {
			// c is still there (expired, not yet removed); d was deleted
			// together with its expiry entry.
			return nil
		}
		t.Fatal("no due key left; want c")
		return nil
	})
	at(t, db, 300, 3, func(tx *kv.Tx) {
		if n := must[int](t)(tx.ExpireDue(100)); n != 1 {
			t.Fatalf("ExpireDue removed %d, want 1 (only c)", n)
		}
	})
}

func TestTxnAllOrNothing(t *testing.T) {
	db := openBolt(t)
	at(t, db, 100, 1, func(tx *kv.Tx) {
		tx.Put("held", []byte("me"), 0)
		tx.Put("gone", []byte("x"), 0)
	})
	at(t, db, 100, 2, func(tx *kv.Tx) {
		cases := []struct {
			name  string
			conds []kv.Cond
		}{
			{"absent fails", []kv.Cond{{Key: "free", Absent: true}, {Key: "held", Absent: true}}},
			{"present fails", []kv.Cond{{Key: "free"}}},
			{"value fails", []kv.Cond{{Key: "held", Value: []byte("you")}}},
		}
		for _, c := range cases {
			ok := must[bool](t)(tx.Txn(c.conds, []kv.Op{{Key: "w1", Value: []byte("1")}, {Key: "gone", Delete: true}}))
			if ok || tx.Has("w1") || !tx.Has("gone") {
				t.Fatalf("%s: ok=%v, and the writes happened", c.name, ok)
			}
		}
		// A bad key among the writes fails the whole Txn before any write.
		if _, err := tx.Txn(nil, []kv.Op{{Key: "w1", Value: []byte("1")}, {Key: ""}}); err == nil {
			t.Fatal("Txn with an empty key succeeded")
		}
		if tx.Has("w1") {
			t.Fatal("Txn wrote before failing on a bad key")
		}
		ok := must[bool](t)(tx.Txn(
			[]kv.Cond{{Key: "free", Absent: true}, {Key: "held", Value: []byte("me")}, {Key: "gone"}},
			[]kv.Op{{Key: "w1", Value: []byte("1"), TTLms: 50}, {Key: "w2", Value: []byte("2")}, {Key: "gone", Delete: true}}))
		if !ok {
			t.Fatal("Txn whose conditions hold answered false")
		}
		if e, _ := tx.Get("w1"); string(e.Value) != "1" || e.ExpiresAt != 150 || e.Revision != 2 {
			t.Fatalf("w1 = %+v", e)
		}
		if !tx.Has("w2") || tx.Has("gone") {
			t.Fatal("Txn writes missing")
		}
	})
}

func TestScanAndDeletePrefix(t *testing.T) {
	db := openBolt(t)
	at(t, db, 100, 1, func(tx *kv.Tx) {
		tx.Put("p:1", []byte("a"), 0)
		tx.Put("p:2", []byte("b"), 10*time.Millisecond)
		tx.Put("p:3", []byte("c"), time.Hour)
		tx.Put("q:1", []byte("d"), 10*time.Millisecond)
		tx.Put("p", []byte("e"), 0)
	})
	at(t, db, 200, 2, func(tx *kv.Tx) {
		var keys []string
		tx.Scan("p:", func(e kv.Entry) bool { keys = append(keys, e.Key); return true })
		if fmt.Sprint(keys) != "[p:1 p:3]" {
			t.Fatalf("Scan = %v (expired keys must be skipped)", keys)
		}
		keys = nil
		tx.Scan("p:", func(e kv.Entry) bool { keys = append(keys, e.Key); return false })
		if len(keys) != 1 {
			t.Fatalf("Scan did not stop: %v", keys)
		}
		if n := must[int](t)(tx.DeletePrefix("")); n != 0 {
			t.Fatalf("DeletePrefix(\"\") removed %d", n)
		}
		// Live and expired keys alike.
		if n := must[int](t)(tx.DeletePrefix("p:")); n != 3 {
			t.Fatalf("DeletePrefix removed %d, want 3", n)
		}
		if !tx.Has("p") {
			t.Fatal("DeletePrefix removed a key outside the prefix")
		}
		// Their expiry entries went with them: only q:1 is left to expire.
		if n := must[int](t)(tx.ExpireDue(100)); n != 1 {
			t.Fatalf("ExpireDue = %d, want 1", n)
		}
	})
}

func TestExpireDueInOrderWithLimit(t *testing.T) {
	db := openBolt(t)
	at(t, db, 0, 1, func(tx *kv.Tx) {
		for i := 0; i < 10; i++ {
			tx.Put(fmt.Sprintf("k%d", i), []byte("v"), time.Duration(10-i)*time.Millisecond)
		}
		// Overwritten with a longer TTL: the old expiry entry must not
		// remove it.
		tx.Put("k9", []byte("v2"), time.Hour)
		// Overwritten without TTL.
		tx.Put("k8", []byte("v2"), 0)
	})
	at(t, db, 5, 2, func(tx *kv.Tx) {
		// Due at 5: k5 (exp 5), k6 (4), k7 (3); k8 and k9 were re-put.
		if n := must[int](t)(tx.ExpireDue(2)); n != 2 {
			t.Fatalf("ExpireDue(2) = %d", n)
		}
		if n := must[int](t)(tx.ExpireDue(100)); n != 1 {
			t.Fatalf("second ExpireDue = %d, want 1", n)
		}
		if n := must[int](t)(tx.ExpireDue(100)); n != 0 {
			t.Fatalf("third ExpireDue = %d, want 0", n)
		}
		if !tx.Has("k9") || !tx.Has("k8") || !tx.Has("k0") {
			t.Fatal("ExpireDue removed a live key")
		}
	})
	db.View(func(b *bolt.Tx) error {
		if kv.Due(b, 5) {
			t.Fatal("Due at 5 after expiring everything due")
		}
		if !kv.Due(b, 6) {
			t.Fatal("k4 not due at 6")
		}
		// Expired-but-not-removed keys are gone from the raw bucket only
		// after ExpireDue; removed ones are gone for good.
		if b.Bucket([]byte("kv")).Get([]byte("k7")) != nil {
			t.Fatal("k7 still stored")
		}
		return nil
	})
}

// fakeNode applies KV commands through a real FSM with a manual FSM clock
// and increasing Raft indexes, like a single-node cluster.
type fakeNode struct {
	t   *testing.T
	fsm *raftfsm.FSM

	mu    sync.Mutex
	index uint64
	now   int64
}

func newFakeNode(t *testing.T) *fakeNode {
	reg := raftfsm.NewRegistry()
	kv.Register(reg)
	f, err := raftfsm.Open(raftfsm.Options{Dir: t.TempDir(), Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return &fakeNode{t: t, fsm: f, now: 1_000_000}
}

func (n *fakeNode) Propose(ctx context.Context, typ raftfsm.CommandType, payload []byte) ([]byte, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.index += 3 // other entries (noops, domain commands) come in between
	c := raftfsm.Command{Type: typ, Version: 1, FSMTime: n.now, WallTime: time.Now().UnixMilli(), Payload: payload}
	r := n.fsm.Apply(&raft.Log{Index: n.index, Type: raft.LogCommand, Data: c.Encode()}).(raftfsm.Response)
	return r.Data, r.Err
}

func (n *fakeNode) View(fn func(tx *bolt.Tx) error) error { return n.fsm.View(fn) }

func (n *fakeNode) FSMNow() int64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.now
}

func (n *fakeNode) advance(d time.Duration) {
	n.mu.Lock()
	n.now += d.Milliseconds()
	n.mu.Unlock()
}

func TestLockFencingAndTTLOnFSMTime(t *testing.T) {
	n := newFakeNode(t)
	c := kv.Client{P: n, V: n}
	ctx := context.Background()

	f1, ok, err := c.Lock(ctx, "lock:session:1", "alice", 10*time.Second)
	if err != nil || !ok || f1 == 0 {
		t.Fatalf("Lock = %d %v %v", f1, ok, err)
	}
	if _, ok, err := c.Lock(ctx, "lock:session:1", "bob", 10*time.Second); ok || err != nil {
		t.Fatalf("second Lock = %v %v; want refused", ok, err)
	}
	if ok, _ := c.Unlock(ctx, "lock:session:1", "bob"); ok {
		t.Fatal("Unlock with someone else's token succeeded")
	}
	e, live, _ := c.Get("lock:session:1")
	if !live || string(e.Value) != "alice" || e.Revision != f1 {
		t.Fatalf("Get = %+v %v", e, live)
	}
	// Wall-clock time passing does not expire anything: only FSM time does.
	time.Sleep(20 * time.Millisecond)
	n.advance(9999 * time.Millisecond)
	if _, live, _ := c.Get("lock:session:1"); !live {
		t.Fatal("lock expired before its TTL in FSM time")
	}
	n.advance(time.Millisecond)
	if _, live, _ := c.Get("lock:session:1"); live {
		t.Fatal("lock still live at its expiry in FSM time")
	}
	f2, ok, err := c.Lock(ctx, "lock:session:1", "bob", 10*time.Second)
	if err != nil || !ok || f2 <= f1 {
		t.Fatalf("Lock after expiry = %d %v %v; want a fence above %d", f2, ok, err, f1)
	}
	if ok, _ := c.Unlock(ctx, "lock:session:1", "alice"); ok {
		t.Fatal("the expired holder released the new holder's lock")
	}
	if ok, err := c.Unlock(ctx, "lock:session:1", "bob"); !ok || err != nil {
		t.Fatalf("Unlock by the holder = %v %v", ok, err)
	}
	f3, ok, _ := c.Lock(ctx, "lock:session:1", "carol", time.Second)
	if !ok || f3 <= f2 {
		t.Fatalf("fence %d after %d: not increasing", f3, f2)
	}

	// Expire removes lapsed keys; List and Get hide them before that.
	c.Put(ctx, "tmp:a", []byte("1"), time.Second)
	c.Put(ctx, "tmp:b", []byte("2"), 0)
	n.advance(2 * time.Second)
	if l, _ := c.List("tmp:", 10); len(l) != 1 || l[0].Key != "tmp:b" {
		t.Fatalf("List = %+v", l)
	}
	if got, err := c.Expire(ctx, 100); err != nil || got != 2 { // tmp:a and carol's lock
		t.Fatalf("Expire = %d %v", got, err)
	}
	// The txn op (no client method uses it any more, but it stays a valid
	// command for entries already in a log).
	txn, _ := json.Marshal(map[string]any{"op": "txn", "conds": []kv.Cond{{Key: "tmp:b", Value: []byte("2")}}, "ops": []kv.Op{{Key: "tmp:b", Delete: true}}})
	if out, err := n.Propose(ctx, kv.CmdOp, txn); err != nil || !bytes.Contains(out, []byte(`"ok":true`)) {
		t.Fatalf("txn = %s %v", out, err)
	}
	if ok, err := c.Delete(ctx, "tmp:b"); ok || err != nil {
		t.Fatalf("Delete of a deleted key = %v %v", ok, err)
	}
}

func TestClientRejectsBadCommands(t *testing.T) {
	n := newFakeNode(t)
	c := kv.Client{P: n, V: n}
	ctx := context.Background()
	if _, err := c.SetIfAbsent(ctx, "", []byte("x"), 0); err == nil {
		t.Fatal("empty key accepted")
	}
	if _, err := c.SetIfAbsent(ctx, "k", []byte("x"), -time.Second); err == nil {
		t.Fatal("negative ttl accepted")
	}
	big := make([]kv.Op, 65)
	for i := range big {
		big[i] = kv.Op{Key: fmt.Sprint(i)}
	}
	for name, ops := range map[string][]kv.Op{"oversized txn": big, "negative ttl in txn": {{Key: "a", TTLms: -1}}} {
		p, _ := json.Marshal(map[string]any{"op": "txn", "ops": ops})
		if out, err := n.Propose(ctx, kv.CmdOp, p); err != nil || !bytes.Contains(out, []byte(`"error"`)) {
			t.Fatalf("%s accepted: %s %v", name, out, err)
		}
	}
	// A raw command with an unknown op or garbage is an error result, not a
	// halted FSM.
	for _, p := range []string{`{"op":"explode","key":"k"}`, `not json`, `{"op":"txn","ops":[{"key":""}]}`} {
		out, err := n.Propose(ctx, kv.CmdOp, []byte(p))
		if err != nil || !bytes.Contains(out, []byte(`"error"`)) {
			t.Fatalf("%s: %s %v", p, out, err)
		}
	}
	if err := n.fsm.Halted(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SetIfAbsent(ctx, "k", []byte("x"), 0); err != nil {
		t.Fatal(err)
	}
}

// A read-only view reads many keys through the kv bucket it opened once:
// live, expired and absent keys answer as in a writable transaction, and
// a view of a file with no KV yet answers nothing.
func TestReadViewGetsManyKeys(t *testing.T) {
	db := openBolt(t)
	view := func(now int64, fn func(tx *kv.Tx)) {
		t.Helper()
		if err := db.View(func(b *bolt.Tx) error { fn(kv.NewTx(b, now, 0)); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	view(0, func(tx *kv.Tx) {
		for _, k := range []string{"a", "b"} {
			if _, ok := tx.Get(k); ok {
				t.Fatalf("%s found before the KV exists", k)
			}
		}
	})
	at(t, db, 1000, 7, func(tx *kv.Tx) {
		must[bool](t)(tx.SetIfAbsent("live", []byte("1"), 0))
		must[bool](t)(tx.SetIfAbsent("short", []byte("2"), 500*time.Millisecond))
	})
	for _, now := range []int64{1000, 1499, 1500} {
		var written, read []string
		at(t, db, now, 8, func(tx *kv.Tx) {
			for _, k := range []string{"live", "short", "none", "live"} {
				e, ok := tx.Get(k)
				written = append(written, fmt.Sprint(k, ok, string(e.Value), e.Revision))
			}
		})
		view(now, func(tx *kv.Tx) {
			for _, k := range []string{"live", "short", "none", "live"} {
				e, ok := tx.Get(k)
				read = append(read, fmt.Sprint(k, ok, string(e.Value), e.Revision))
			}
		})
		if fmt.Sprint(written) != fmt.Sprint(read) {
			t.Fatalf("at %d: a read view answers %v, a writable transaction %v", now, read, written)
		}
		if (now < 1500) != strings.Contains(fmt.Sprint(read), "shorttrue") {
			t.Fatalf("at %d: %v", now, read)
		}
	}
}
