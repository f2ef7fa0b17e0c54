package cloudsync

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"masterorder/orders/cloudsync/emulatortest"
)

// memOutbox is an in-memory Outbox with failure injection. The Firestore
// side of the tests is the real emulator; only the replicated outbox is
// stood in for.
type memOutbox struct {
	mu      sync.Mutex
	rows    []Change // every row ever added, by Seq
	synced  map[uint64]bool
	marks   map[uint64]int       // MarkSynced calls that applied each Seq
	sent    map[uint64]int       // times Pending handed out each Seq
	addedAt map[uint64]time.Time // when each row became available
	markAt  map[uint64]time.Time // when each row was first marked synced
	nextSeq uint64

	pendingCalls int
	failMarks    int  // fail this many MarkSynced calls
	applyThenErr bool // a failing MarkSynced still applies (reply lost)
	failPending  int  // fail this many Pending calls
	// holdAfterFail, when set, parks the first Pending call after a failed
	// MarkSynced until it is closed: the test sees the failure in the
	// status before the next pass can clear it.
	holdAfterFail chan struct{}
	markFailed    bool
}

func newMemOutbox() *memOutbox {
	return &memOutbox{
		synced:  map[uint64]bool{},
		marks:   map[uint64]int{},
		sent:    map[uint64]int{},
		addedAt: map[uint64]time.Time{},
		markAt:  map[uint64]time.Time{},
	}
}

func (o *memOutbox) add(orderID int64, op string, doc map[string]any) uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.nextSeq++
	o.rows = append(o.rows, Change{Seq: o.nextSeq, OrderID: orderID, Op: op, Doc: doc})
	o.addedAt[o.nextSeq] = time.Now()
	return o.nextSeq
}

func (o *memOutbox) Pending(ctx context.Context, limit int) ([]Change, error) {
	o.mu.Lock()
	if o.markFailed && o.holdAfterFail != nil {
		o.markFailed = false
		o.mu.Unlock()
		select {
		case <-o.holdAfterFail:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		o.mu.Lock()
	}
	defer o.mu.Unlock()
	o.pendingCalls++
	if o.failPending > 0 {
		o.failPending--
		return nil, errors.New("injected: outbox read failed")
	}
	var out []Change
	for _, r := range o.rows {
		if len(out) == limit {
			break
		}
		if !o.synced[r.Seq] {
			out = append(out, r)
			o.sent[r.Seq]++
		}
	}
	return out, nil
}

func (o *memOutbox) MarkSynced(ctx context.Context, seqs []uint64) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	fail := o.failMarks > 0
	if fail {
		o.failMarks--
		o.markFailed = true
		if !o.applyThenErr {
			return errors.New("injected: no quorum")
		}
	}
	now := time.Now()
	for _, s := range seqs {
		if !o.synced[s] {
			o.markAt[s] = now
		}
		o.synced[s] = true
		o.marks[s]++
	}
	if fail {
		return errors.New("injected: leadership lost after commit")
	}
	return nil
}

func (o *memOutbox) pending() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, r := range o.rows {
		if !o.synced[r.Seq] {
			n++
		}
	}
	return n
}

func (o *memOutbox) calls() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.pendingCalls
}

// expected is the collection a correct sync must leave: the last change of
// each order decides.
func (o *memOutbox) expected(t testing.TB) map[int64]map[string]any {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	want := map[int64]map[string]any{}
	for _, r := range o.rows {
		switch r.Op {
		case OpDelete:
			delete(want, r.OrderID)
		case OpUpsert:
			d, err := normalizeDoc(r.OrderID, r.Doc)
			if err != nil {
				t.Fatalf("normalizing expected doc: %v", err)
			}
			want[r.OrderID] = d
		}
	}
	return want
}

// orderDoc is an order object as the API shows it.
func orderDoc(id int64, session, table, status string) map[string]any {
	var reqID any
	if id%2 == 0 {
		reqID = fmt.Sprintf("req-%d", id)
	}
	toppings := []any{}
	if id%3 == 0 {
		toppings = []any{map[string]any{"toppingId": "egg", "name": "味玉", "price": 120}}
	}
	unit := 900
	if len(toppings) > 0 {
		unit += 120
	}
	qty := int(id%4) + 1
	return map[string]any{
		"orderId":   id,
		"sessionId": session,
		"tableId":   table,
		"status":    status,
		"items": []any{map[string]any{
			"menuId": "ramen", "name": "醤油ラーメン", "quantity": qty,
			"toppings": toppings, "unitPrice": unit, "lineTotal": unit * qty,
		}},
		"totalPrice": unit * qty,
		"createdAt":  "2026-11-29T12:00:00+09:00",
		"updatedAt":  "2026-11-29T12:0" + strconv.Itoa(int(id%10)) + ":00+09:00",
		"requestId":  reqID,
		"source":     "guest",
	}
}

var shopSeq struct {
	sync.Mutex
	n int
}

// testShop is a shop id of its own for each test.
func testShop(t testing.TB) string {
	shopSeq.Lock()
	defer shopSeq.Unlock()
	shopSeq.n++
	return fmt.Sprintf("shop-%d-%d", os.Getpid(), shopSeq.n)
}

func testConfig(hostPort, shop string) Config {
	return Config{
		Enabled:       true,
		ProjectID:     "demo-cloudsync-test",
		EmulatorHost:  hostPort,
		ShopID:        shop,
		MinBackoff:    20 * time.Millisecond,
		MaxBackoff:    300 * time.Millisecond,
		CallTimeout:   5 * time.Second, // generous: CI machines can be busy
		ProbeInterval: 200 * time.Millisecond,
	}
}

func testLogger(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	return nil
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p[:len(p)-1]))
	return len(p), nil
}

// running is a Syncer whose Run goroutine the test controls.
type running struct {
	s      *Syncer
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

func startSyncer(t testing.TB, cfg Config, ob Outbox) *running {
	t.Helper()
	s, err := New(cfg, ob, testLogger(t))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{s: s, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- s.Run(ctx) }()
	t.Cleanup(func() { r.stop(t); s.Close() })
	return r
}

func (r *running) stop(t testing.TB) {
	r.once.Do(func() {
		r.cancel()
		select {
		case err := <-r.done:
			if err != nil {
				t.Errorf("Run returned %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("Run did not return 10 s after cancel")
		}
	})
}

// reader is an independent client that looks at what the emulator holds.
func reader(t testing.TB, hostPort, project string) *firestore.Client {
	t.Helper()
	conn, err := grpc.NewClient("passthrough:///"+hostPort,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(emulatorOwner{}))
	if err != nil {
		t.Fatal(err)
	}
	c, err := firestore.NewClient(context.Background(), project, option.WithGRPCConn(conn))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); conn.Close() })
	return c
}

func readAll(t testing.TB, c *firestore.Client, shop string) map[int64]map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	docs, err := c.Collection("shops/" + shop + "/orders").Documents(ctx).GetAll()
	if err != nil {
		t.Fatalf("reading the collection: %v", err)
	}
	got := map[int64]map[string]any{}
	for _, d := range docs {
		id, err := strconv.ParseInt(d.Ref.ID, 10, 64)
		if err != nil {
			t.Fatalf("document id %q is not a decimal order id", d.Ref.ID)
		}
		got[id] = d.Data()
	}
	return got
}

// checkCollection compares the collection with want, field by field;
// syncedAt must be a Firestore timestamp.
func checkCollection(t testing.TB, c *firestore.Client, shop string, want map[int64]map[string]any) {
	t.Helper()
	got := readAll(t, c, shop)
	var ids []int64
	for id := range got {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	if len(got) != len(want) {
		t.Errorf("collection has %d documents %v, want %d", len(got), ids, len(want))
	}
	for id, w := range want {
		g, ok := got[id]
		if !ok {
			t.Errorf("order %d: no document", id)
			continue
		}
		if _, ok := g[FieldSyncedAt].(time.Time); !ok {
			t.Errorf("order %d: syncedAt = %#v, want a timestamp", id, g[FieldSyncedAt])
		}
		delete(g, FieldSyncedAt)
		if !reflect.DeepEqual(g, w) {
			t.Errorf("order %d:\n got %#v\nwant %#v", id, g, w)
		}
	}
	for id := range got {
		if _, ok := want[id]; !ok {
			t.Errorf("order %d: unexpected document", id)
		}
	}
}

func eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// sharedEmulator is the real emulator shared by the tests that neither stop
// nor restart it (each test uses its own shop id); it skips the test when
// the emulator is not installed, except in CI.
func sharedEmulator(t testing.TB) *emulatortest.Emulator {
	t.Helper()
	return emulatortest.Shared(t)
}

// ownEmulator is a real emulator for this test alone (to stop or restart).
func ownEmulator(t testing.TB) *emulatortest.Emulator {
	t.Helper()
	return emulatortest.New(t)
}

func TestMain(m *testing.M) {
	code := m.Run()
	emulatortest.StopShared()
	os.Exit(code)
}
