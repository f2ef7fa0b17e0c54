package cloudsync

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// Changes appear as documents with the API's fields and types, including a
// document that went through JSON (float64 numbers) on its way.
func TestUpsertsBecomeDocuments(t *testing.T) {
	emu := sharedEmulator(t)
	shop := testShop(t)
	ob := newMemOutbox()
	for id := int64(1); id <= 6; id++ {
		ob.add(id, OpUpsert, orderDoc(id, "sess-A", "T1", "ACCEPTED"))
	}
	// The server may hand over an order object decoded from its JSON.
	var fromJSON map[string]any
	b, _ := json.Marshal(orderDoc(7, "sess-B", "T2", "COOKING"))
	if err := json.Unmarshal(b, &fromJSON); err != nil {
		t.Fatal(err)
	}
	ob.add(7, OpUpsert, fromJSON)

	r := startSyncer(t, testConfig(emu.HostPort(), shop), ob)
	eventually(t, 20*time.Second, "outbox drained", func() bool { return ob.pending() == 0 })

	rd := reader(t, emu.HostPort(), "demo-cloudsync-test")
	checkCollection(t, rd, shop, ob.expected(t))

	got := readAll(t, rd, shop)
	if v, ok := got[7]["orderId"].(int64); !ok || v != 7 {
		t.Errorf("orderId of the JSON-decoded order = %#v, want int64 7", got[7]["orderId"])
	}
	item := got[7]["items"].([]any)[0].(map[string]any)
	if _, ok := item["quantity"].(int64); !ok {
		t.Errorf("quantity = %#v, want an integer", item["quantity"])
	}
	if got[1]["requestId"] != nil || got[2]["requestId"] != "req-2" {
		t.Errorf("requestId: %#v / %#v, want null / \"req-2\"", got[1]["requestId"], got[2]["requestId"])
	}
	if tp, ok := got[1]["items"].([]any)[0].(map[string]any)["toppings"].([]any); !ok || len(tp) != 0 {
		t.Errorf("toppings of order 1 = %#v, want []", got[1]["items"].([]any)[0].(map[string]any)["toppings"])
	}

	st := r.s.Status()
	if !st.Enabled || !st.Online || st.LastSyncAt == nil || st.LastError != nil || !st.Active {
		t.Errorf("status = %+v, want enabled, online, active, lastSyncAt set, no error", st)
	}
}

// Several changes to the same order are applied in Seq order, inside one
// batch and across batch boundaries.
func TestChangesApplyInSeqOrder(t *testing.T) {
	emu := sharedEmulator(t)
	rd := reader(t, emu.HostPort(), "demo-cloudsync-test")
	for _, batch := range []int{200, 2} {
		shop := testShop(t)
		ob := newMemOutbox()
		ob.add(1, OpUpsert, orderDoc(1, "s", "T1", "ACCEPTED"))
		ob.add(1, OpUpsert, orderDoc(1, "s", "T1", "COOKING"))
		ob.add(2, OpUpsert, orderDoc(2, "s", "T1", "ACCEPTED"))
		ob.add(1, OpUpsert, orderDoc(1, "s", "T1", "READY"))
		ob.add(2, OpDelete, nil) // a delete after an upsert deletes
		ob.add(3, OpDelete, nil) // deleting what was never written is fine
		ob.add(3, OpUpsert, orderDoc(3, "s", "T1", "CANCELLED"))
		ob.add(4, OpUpsert, orderDoc(4, "s", "T1", "ACCEPTED"))
		ob.add(4, OpDelete, nil)
		ob.add(4, OpUpsert, orderDoc(4, "s", "T1", "SERVED"))

		cfg := testConfig(emu.HostPort(), shop)
		cfg.BatchSize = batch
		startSyncer(t, cfg, ob)
		eventually(t, 20*time.Second, "outbox drained", func() bool { return ob.pending() == 0 })
		checkCollection(t, rd, shop, ob.expected(t))
		got := readAll(t, rd, shop)
		if got[1]["status"] != "READY" || got[4]["status"] != "SERVED" {
			t.Errorf("batch %d: statuses %v / %v, want READY / SERVED", batch, got[1]["status"], got[4]["status"])
		}
		if _, ok := got[2]; ok {
			t.Errorf("batch %d: order 2 still has a document after its delete", batch)
		}
	}
}

// Checkout: the session's orders leave the collection, the others stay.
func TestDeleteRemovesDocuments(t *testing.T) {
	emu := sharedEmulator(t)
	shop := testShop(t)
	ob := newMemOutbox()
	r := startSyncer(t, testConfig(emu.HostPort(), shop), ob)
	for id := int64(1); id <= 5; id++ {
		ob.add(id, OpUpsert, orderDoc(id, "sess-1", "T1", "SERVED"))
	}
	for id := int64(6); id <= 7; id++ {
		ob.add(id, OpUpsert, orderDoc(id, "sess-2", "T2", "COOKING"))
	}
	r.s.Notify()
	eventually(t, 20*time.Second, "upserts synced", func() bool { return ob.pending() == 0 })
	rd := reader(t, emu.HostPort(), "demo-cloudsync-test")
	if n := len(readAll(t, rd, shop)); n != 7 {
		t.Fatalf("%d documents before checkout, want 7", n)
	}

	for id := int64(1); id <= 5; id++ { // checkout of sess-1
		ob.add(id, OpDelete, nil)
	}
	r.s.Notify()
	eventually(t, 20*time.Second, "deletes synced", func() bool { return ob.pending() == 0 })
	checkCollection(t, rd, shop, ob.expected(t))
	if n := len(readAll(t, rd, shop)); n != 2 {
		t.Errorf("%d documents after checkout, want 2 (sess-2's)", n)
	}
}

// No internet: Run keeps retrying, the status says offline with the error,
// nothing leaves the outbox. Back online (same address): everything
// arrives, each row is marked synced once, and the final state matches.
func TestEmulatorDownAndBack(t *testing.T) {
	emu := ownEmulator(t)
	shop := testShop(t)
	ob := newMemOutbox()
	cfg := testConfig(emu.HostPort(), shop)
	cfg.CallTimeout = 2 * time.Second // how long an attempt waits for the dead emulator
	r := startSyncer(t, cfg, ob)
	for id := int64(1); id <= 10; id++ {
		ob.add(id, OpUpsert, orderDoc(id, "s1", "T1", "ACCEPTED"))
	}
	r.s.Notify()
	eventually(t, 20*time.Second, "first orders synced", func() bool { return ob.pending() == 0 })

	emu.Stop()
	down := time.Now()
	// While offline every order changes again (the emulator forgets its
	// data on restart, so the final check needs every order rewritten),
	// new ones arrive, and a checkout deletes some.
	for id := int64(1); id <= 10; id++ {
		ob.add(id, OpUpsert, orderDoc(id, "s1", "T1", "COOKING"))
	}
	for id := int64(11); id <= 25; id++ {
		ob.add(id, OpUpsert, orderDoc(id, "s2", "T2", "ACCEPTED"))
		r.s.Notify()
	}
	for id := int64(1); id <= 3; id++ {
		ob.add(id, OpDelete, nil)
	}
	r.s.Notify()
	const wantPending = 10 + 15 + 3

	eventually(t, 20*time.Second, "status offline", func() bool {
		st := r.s.Status()
		return !st.Online && st.LastError != nil && st.OfflineSince != nil
	})
	t.Logf("offline detected %v after the emulator stopped: %s", time.Since(down).Round(time.Millisecond), *r.s.Status().LastError)
	callsBefore := ob.calls()
	time.Sleep(2500 * time.Millisecond)
	if ob.calls() <= callsBefore {
		t.Errorf("Run stopped retrying while offline (%d Pending calls before, %d after)", callsBefore, ob.calls())
	}
	if p := ob.pending(); p != wantPending {
		t.Errorf("pending while offline = %d, want %d", p, wantPending)
	}
	st := r.s.Status()
	if st.Online || st.LastError == nil || !st.Active {
		t.Errorf("status while offline = %+v", st)
	}

	if err := emu.Restart(); err != nil {
		t.Fatal(err)
	}
	up := time.Now()
	eventually(t, 30*time.Second, "outbox drained after restart", func() bool { return ob.pending() == 0 })
	t.Logf("caught up %v after the emulator came back", time.Since(up).Round(time.Millisecond))
	eventually(t, 5*time.Second, "status online", func() bool { return r.s.Status().Online })
	st = r.s.Status()
	if st.LastError != nil || st.OfflineSince != nil || st.LastSyncAt == nil || st.LastSyncAt.Before(up) {
		t.Errorf("status after recovery = %+v", st)
	}

	rd := reader(t, emu.HostPort(), "demo-cloudsync-test")
	checkCollection(t, rd, shop, ob.expected(t))
	ob.mu.Lock()
	for _, row := range ob.rows {
		if n := ob.marks[row.Seq]; n != 1 {
			t.Errorf("seq %d marked synced %d times, want once", row.Seq, n)
		}
	}
	ob.mu.Unlock()
}

// MarkSynced fails (no quorum; or it commits but the reply is lost): the
// rows are pushed again and the result is still right.
func TestMarkSyncedFailureResends(t *testing.T) {
	for _, applied := range []bool{false, true} {
		name := "not-applied"
		if applied {
			name = "applied-reply-lost"
		}
		t.Run(name, func(t *testing.T) {
			emu := sharedEmulator(t)
			shop := testShop(t)
			ob := newMemOutbox()
			ob.failMarks = 3
			ob.applyThenErr = applied
			// The syncer waits after the first failed mark until the status
			// has been seen: when the mark committed, nothing is left to
			// push and the next pass would clear the error at once.
			ob.holdAfterFail = make(chan struct{})
			for id := int64(1); id <= 8; id++ {
				ob.add(id, OpUpsert, orderDoc(id, "s", "T1", "ACCEPTED"))
			}
			cfg := testConfig(emu.HostPort(), shop)
			cfg.MinBackoff = 100 * time.Millisecond
			r := startSyncer(t, cfg, ob)
			eventually(t, 20*time.Second, "a failed MarkSynced in the status", func() bool {
				st := r.s.Status()
				return st.LastError != nil && strings.Contains(*st.LastError, "marking synced")
			})
			close(ob.holdAfterFail)
			if st := r.s.Status(); !st.Online {
				t.Errorf("Online = false while only MarkSynced fails; Firestore answered")
			}
			// The orders move on while marking fails.
			ob.add(2, OpUpsert, orderDoc(2, "s", "T1", "READY"))
			ob.add(5, OpDelete, nil)
			r.s.Notify()
			eventually(t, 20*time.Second, "outbox drained", func() bool { return ob.pending() == 0 })
			eventually(t, 5*time.Second, "error cleared", func() bool { return r.s.Status().LastError == nil })

			rd := reader(t, emu.HostPort(), "demo-cloudsync-test")
			checkCollection(t, rd, shop, ob.expected(t))
			ob.mu.Lock()
			resent := 0
			for _, row := range ob.rows {
				if ob.sent[row.Seq] > 1 {
					resent++
				}
			}
			ob.mu.Unlock()
			// A MarkSynced that did not commit leaves the rows pending, so
			// they are pushed again; one that committed without a reply
			// leaves nothing to re-send.
			if !applied && resent == 0 {
				t.Errorf("no row was pushed twice; the failure injection did not bite")
			}
		})
	}
}

// The emulator is reached through emulator_host alone: a wrong
// FIRESTORE_EMULATOR_HOST in the environment changes nothing.
func TestEmulatorHostWinsOverEnvironment(t *testing.T) {
	emu := sharedEmulator(t)
	t.Setenv("FIRESTORE_EMULATOR_HOST", "127.0.0.1:1")
	shop := testShop(t)
	ob := newMemOutbox()
	ob.add(1, OpUpsert, orderDoc(1, "s", "T1", "ACCEPTED"))
	startSyncer(t, testConfig(emu.HostPort(), shop), ob)
	eventually(t, 20*time.Second, "outbox drained", func() bool { return ob.pending() == 0 })
	checkCollection(t, reader(t, emu.HostPort(), "demo-cloudsync-test"), shop, ob.expected(t))
}

// An idle leader still learns whether Firestore answers (probe), and a
// failed outbox read is reported and retried.
func TestIdleProbeAndOutboxErrors(t *testing.T) {
	emu := ownEmulator(t)
	ob := newMemOutbox()
	ob.failPending = 2
	cfg := testConfig(emu.HostPort(), testShop(t))
	cfg.CallTimeout = 2 * time.Second
	r := startSyncer(t, cfg, ob)
	eventually(t, 20*time.Second, "online with an empty outbox", func() bool {
		st := r.s.Status()
		return st.Online && st.LastError == nil
	})
	if st := r.s.Status(); st.LastSyncAt != nil {
		t.Errorf("LastSyncAt = %v before anything was synced, want nil", st.LastSyncAt)
	}
	emu.Stop()
	eventually(t, 20*time.Second, "offline seen by the probe", func() bool { return !r.s.Status().Online })
}

func TestRunLifecycle(t *testing.T) {
	emu := sharedEmulator(t)
	ob := newMemOutbox()
	s, err := New(testConfig(emu.HostPort(), testShop(t)), ob, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	eventually(t, 10*time.Second, "active", func() bool { return s.Status().Active })
	if err := s.Run(ctx); err == nil {
		t.Errorf("a second concurrent Run returned nil, want an error")
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run after cancel = %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	if s.Status().Active {
		t.Errorf("still active after Run returned")
	}
	// Leadership regained: Run again on the same Syncer.
	ob.add(1, OpUpsert, orderDoc(1, "s", "T1", "ACCEPTED"))
	ctx2, cancel2 := context.WithCancel(context.Background())
	go func() { done <- s.Run(ctx2) }()
	eventually(t, 20*time.Second, "synced in the second term", func() bool { return ob.pending() == 0 })
	cancel2()
	<-done
}

// A row whose document cannot be stored is skipped (logged, marked) instead
// of blocking the shop; an unknown op stops the sync with a clear error.
func TestBadRows(t *testing.T) {
	emu := sharedEmulator(t)
	shop := testShop(t)
	ob := newMemOutbox()
	ob.add(1, OpUpsert, orderDoc(1, "s", "T1", "ACCEPTED"))
	ob.add(2, OpUpsert, map[string]any{"status": make(chan int)})
	ob.add(3, OpUpsert, orderDoc(3, "s", "T1", "ACCEPTED"))
	r := startSyncer(t, testConfig(emu.HostPort(), shop), ob)
	eventually(t, 20*time.Second, "outbox drained", func() bool { return ob.pending() == 0 })
	rd := reader(t, emu.HostPort(), "demo-cloudsync-test")
	if got := readAll(t, rd, shop); len(got) != 2 || got[1] == nil || got[3] == nil {
		t.Errorf("documents %v, want orders 1 and 3", got)
	}

	ob.add(4, "patch", nil)
	ob.add(5, OpUpsert, orderDoc(5, "s", "T1", "ACCEPTED"))
	r.s.Notify()
	eventually(t, 10*time.Second, "unknown op reported", func() bool {
		st := r.s.Status()
		return st.LastError != nil && strings.Contains(*st.LastError, `unknown op "patch"`)
	})
	if p := ob.pending(); p != 2 {
		t.Errorf("pending = %d after an unknown op, want 2 (nothing skipped)", p)
	}
}
