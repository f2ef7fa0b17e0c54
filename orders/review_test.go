package orders

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"

	"github.com/hashicorp/raft"
	bolt "go.etcd.io/bbolt"

	"masterorder/kv"
	"masterorder/orders/admission"
	"masterorder/orders/store"
	"masterorder/raftfsm"
)

// The review findings (issue 14), judged on one FSM with the real
// dispatch table, fed committed entries directly: what every node applies.

// rv is one replica holding the fzSetup state; next is the next index.
type rv struct {
	t    *testing.T
	f    *raftfsm.FSM
	next uint64
}

func newRV(t *testing.T) *rv {
	t.Helper()
	f, err := raftfsm.Open(raftfsm.Options{Dir: t.TempDir(), Registry: fzRegistry(), Migrate: store.Migrate, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	r := &rv{t: t, f: f, next: 1}
	for _, l := range fzSetup() {
		if res, _ := f.Apply(l).(raftfsm.Response); res.Err != nil {
			t.Fatalf("setup entry %d: %v", l.Index, res.Err)
		}
		r.next = l.Index + 1
	}
	return r
}

// apply commits one command and decodes its Result.
func (r *rv) apply(typ raftfsm.CommandType, payload any) Result {
	r.t.Helper()
	l := fzEntry(r.next, typ, payload)
	r.next++
	res, _ := r.f.Apply(l).(raftfsm.Response)
	if res.Err != nil {
		r.t.Fatalf("apply type %d: %v", typ, res.Err)
	}
	var out Result
	if err := json.Unmarshal(res.Data, &out); err != nil {
		r.t.Fatalf("decode result %s: %v", res.Data, err)
	}
	return out
}

func (r *rv) query(fn func(db *sql.DB) error) {
	r.t.Helper()
	if err := r.f.Query(fn); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rv) outbox() []store.OutboxRow {
	var rows []store.OutboxRow
	r.query(func(db *sql.DB) (err error) { rows, err = store.PendingOutbox(db, 1000); return })
	return rows
}

func (r *rv) order(id int64) store.Order {
	var o store.Order
	r.query(func(db *sql.DB) error {
		var found bool
		var err error
		o, found, err = store.GetOrder(db, id)
		if err == nil && !found {
			err = fmt.Errorf("order %d not found", id)
		}
		return err
	})
	return o
}

func (r *rv) stock(sku string) int64 {
	var n int64
	r.query(func(db *sql.DB) (err error) { n, _, err = store.GetStock(db, sku); return })
	return n
}

func (r *rv) lockHeld(key string) bool {
	held := false
	if err := r.f.View(func(tx *bolt.Tx) error { _, held = kv.NewTx(tx, r.f.Now(), 0).Get(key); return nil }); err != nil {
		r.t.Fatal(err)
	}
	return held
}

// freshOrder is a guest order in fzSession3 (no windows in the way).
func freshOrder(key, client string, lines []admission.Line) placeOrderCmd {
	return placeOrderCmd{SessionID: fzSession3, RequestID: key, ClientID: client, Source: "guest", Node: "a",
		Items: lines, Fingerprint: admission.Fingerprint(fzSession3, lines), CandidateID: 4242,
		Windows: Windows{IdempotencyMs: 3_600_000}}
}

// Item 1: after checkout the session's orders no longer change: a bump or
// a cancel answers 410 SESSION_CLOSED, puts no stock back, and appends no
// outbox upsert after checkout's delete.
func TestStatusChangeAfterCheckoutIsRefused(t *testing.T) {
	r := newRV(t)
	if res := r.apply(CmdCheckout, checkoutCmd{SessionID: fzSession, Node: "a"}); res.Status != 200 {
		t.Fatalf("checkout: %+v", res)
	}
	before, egg := r.outbox(), r.stock("egg")
	for _, st := range []string{store.StatusCooking, store.StatusCancelled} {
		res := r.apply(CmdSetOrderStatus, setOrderStatusCmd{OrderID: 12345, Status: st, Node: "a"})
		if res.Status != 410 || res.Reason != "SESSION_CLOSED" {
			t.Errorf("%s after checkout = %d %s, want 410 SESSION_CLOSED", st, res.Status, res.Reason)
		}
	}
	if o := r.order(12345); o.Status != store.StatusAccepted {
		t.Errorf("closed bill's order changed to %s", o.Status)
	}
	if got := r.stock("egg"); got != egg {
		t.Errorf("stock of egg %d after refused cancel, want %d", got, egg)
	}
	if after := r.outbox(); len(after) != len(before) || after[len(after)-1].Op != store.OutboxDelete {
		t.Errorf("outbox after refused changes: %+v (before %+v)", after, before)
	}
}

// Item 2: an emptied outbox never hands out a sequence number again, so a
// late outboxSynced for an old one deletes nothing new.
func TestOutboxSeqNeverReused(t *testing.T) {
	r := newRV(t)
	old := r.outbox()
	if len(old) == 0 {
		t.Fatal("setup left no outbox row")
	}
	var seqs []int64
	for _, o := range old {
		seqs = append(seqs, o.Seq)
	}
	r.apply(CmdOutboxSynced, outboxSyncedCmd{Seqs: seqs})
	if n := len(r.outbox()); n != 0 {
		t.Fatalf("%d rows after sync", n)
	}
	r.apply(CmdSetOrderStatus, setOrderStatusCmd{OrderID: 12345, Status: store.StatusCooking, Node: "a"})
	fresh := r.outbox()
	if len(fresh) != 1 {
		t.Fatalf("outbox after a bump: %+v", fresh)
	}
	for _, s := range seqs {
		if fresh[0].Seq <= s {
			t.Fatalf("new outbox row got seq %d, already used by %v", fresh[0].Seq, seqs)
		}
	}
	// A deposed leader's MarkSynced, re-forwarded late.
	r.apply(CmdOutboxSynced, outboxSyncedCmd{Seqs: seqs})
	if got := r.outbox(); len(got) != 1 || got[0] != fresh[0] {
		t.Fatalf("late outboxSynced for old seqs deleted an unsynced row: %+v", got)
	}
}

// Item 3: a SetStock retried with the same request id after guests took
// stock does not reset it (nothing oversold).
func TestSetStockRetryDoesNotResetStock(t *testing.T) {
	r := newRV(t)
	set := setStockCmd{SKU: "egg", Quantity: fzPrice(30), RequestID: "req-stock-1"}
	if res := r.apply(CmdSetStock, set); res.Status != 200 {
		t.Fatalf("set stock: %+v", res)
	}
	lines := admission.Normalize([]admission.Line{{MenuID: "ramen", Quantity: 2, Toppings: []string{"egg"}}})
	if res := r.apply(CmdPlaceOrder, freshOrder("6ba7b810-9dad-41d1-80b4-00c04fd430c8", "guest-stockclient1", lines)); res.Status != 200 {
		t.Fatalf("order: %+v", res)
	}
	// The forwarding layer retries the committed SetStock.
	if res := r.apply(CmdSetStock, set); res.Status != 200 {
		t.Fatalf("retried set stock: %+v", res)
	}
	if got := r.stock("egg"); got != 28 {
		t.Fatalf("egg stock %d after a retried SetStock(30) and 2 sold, want 28", got)
	}
	// A new request (another id) sets it again.
	set.RequestID = "req-stock-2"
	r.apply(CmdSetStock, set)
	if got := r.stock("egg"); got != 30 {
		t.Fatalf("egg stock %d after a new SetStock(30), want 30", got)
	}
}

// Item 3: a checkout/begin retried after a cancel does not re-lock the
// session.
func TestCheckoutBeginRetryAfterCancelDoesNotRelock(t *testing.T) {
	r := newRV(t)
	begin := checkoutCmd{SessionID: fzSession3, LockTTLms: 900_000, Node: "a", RequestID: "req-begin-1"}
	if res := r.apply(CmdCheckoutBegin, begin); res.Status != 200 {
		t.Fatalf("begin: %+v", res)
	}
	if res := r.apply(CmdCheckoutCancel, checkoutCmd{SessionID: fzSession3, Node: "a", RequestID: "req-cancel-1"}); res.Status != 200 {
		t.Fatalf("cancel: %+v", res)
	}
	if res := r.apply(CmdCheckoutBegin, begin); res.Status != 200 {
		t.Fatalf("retried begin: %+v", res)
	}
	if r.lockHeld(keySessionLock(fzSession3)) {
		t.Fatal("a retried checkout/begin re-locked the session after the cancel")
	}
}

// Item 4: a staff order's own result is the whole order object, so the
// handler never needs a read after the commit (which could fail).
func TestStaffOrderResultCarriesTheOrder(t *testing.T) {
	r := newRV(t)
	lines := admission.Normalize([]admission.Line{{MenuID: "tea", Quantity: 3}})
	cmd := placeOrderCmd{SessionID: fzSession3, Source: "staff", Node: "a", Items: lines,
		Fingerprint: admission.Fingerprint(fzSession3, lines), CandidateID: 999, Windows: Windows{IdempotencyMs: 1000}}
	res := r.apply(CmdPlaceOrder, cmd)
	if res.Status != 200 {
		t.Fatalf("staff order: %+v", res)
	}
	var body map[string]any
	if err := json.Unmarshal(res.Body, &body); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"orderId", "sessionId", "tableId", "status", "items", "totalPrice", "createdAt", "updatedAt", "requestId", "source", "allowed", "idempotentReplay"} {
		if _, ok := body[k]; !ok {
			t.Errorf("staff order result lacks %q: %s", k, res.Body)
		}
	}
	if body["tableId"] != "T3" || body["source"] != "staff" || body["totalPrice"] != float64(900) {
		t.Errorf("staff order result: %s", res.Body)
	}
}

// Item 5: the per-node catalog cache is keyed on something no API can
// delete: deleting catalog:version around a menu change must not leave
// this node pricing with the old menu.
func TestCatalogCacheSurvivesDeletedVersionKey(t *testing.T) {
	r := newRV(t)
	del := map[string]any{"op": "delete", "key": keyCatalogVersion}
	r.apply(kv.CmdOp, del)
	tea := admission.Normalize([]admission.Line{{MenuID: "tea", Quantity: 1}})
	// Warm this node's cache under the missing version.
	cmd := freshOrder("6ba7b810-9dad-41d1-80b4-00c04fd430c1", "guest-catalogcli1", tea)
	cmd.ExpectedTotal = fzPrice(300)
	if res := r.apply(CmdPlaceOrder, cmd); res.Status != 200 {
		t.Fatalf("order at the old price: %+v", res)
	}
	r.apply(CmdUpsertMenu, upsertMenuCmd{Item: store.MenuItem{MenuID: "tea", Name: "烏龍茶", Price: 350, Available: true, Toppings: []store.Topping{}}})
	r.apply(kv.CmdOp, del)
	cmd = freshOrder("6ba7b810-9dad-41d1-80b4-00c04fd430c2", "guest-catalogcli2", tea)
	cmd.ExpectedTotal = fzPrice(350)
	if res := r.apply(CmdPlaceOrder, cmd); res.Status != 200 {
		t.Fatalf("order at the new price answered %d %s: the cache kept the old menu", res.Status, res.Reason)
	}
}

// Item 8: the catalog cache holds no stock-derived sold-out mark (stock
// writes do not change its key).
func TestCatalogCacheHoldsNoStockState(t *testing.T) {
	r := newRV(t)
	r.apply(CmdSetStock, setStockCmd{SKU: "tea", Quantity: fzPrice(0), RequestID: "req-zero-tea"})
	var c catalog
	var menu map[string]store.MenuItem
	r.query(func(db *sql.DB) (err error) { menu, err = c.lookup(7, db); return })
	if menu["tea"].SoldOut {
		t.Fatal("catalog cache keeps a stock-derived SoldOut")
	}
}

// Item 6, row 12 before row 13: an unavailable item with a wrong
// expectedTotal is a PRICE_MISMATCH.
func TestPriceMismatchBeforeUnavailable(t *testing.T) {
	r := newRV(t)
	r.apply(CmdUpsertMenu, upsertMenuCmd{Item: store.MenuItem{MenuID: "tea", Name: "烏龍茶", Price: 300, Available: false, Toppings: []store.Topping{}}})
	tea := admission.Normalize([]admission.Line{{MenuID: "tea", Quantity: 1}})
	cmd := freshOrder("6ba7b810-9dad-41d1-80b4-00c04fd430c3", "guest-pricecli01", tea)
	cmd.ExpectedTotal = fzPrice(1)
	if res := r.apply(CmdPlaceOrder, cmd); res.Status != 400 || res.Reason != "PRICE_MISMATCH" {
		t.Fatalf("unavailable item, wrong total = %d %s, want 400 PRICE_MISMATCH", res.Status, res.Reason)
	}
	cmd.ExpectedTotal = fzPrice(300)
	if res := r.apply(CmdPlaceOrder, cmd); res.Status != 409 || res.Reason != "OUT_OF_STOCK" {
		t.Fatalf("unavailable item, right total = %d %s, want 409 OUT_OF_STOCK", res.Status, res.Reason)
	}
}

// Item 6: the forwarding layer re-proposing the guest's own command (same
// attempt) is the guest's first answer, not a replay; another request
// with the same key is.
func TestInternalRetryIsNotAReplay(t *testing.T) {
	r := newRV(t)
	tea := admission.Normalize([]admission.Line{{MenuID: "tea", Quantity: 1}})
	cmd := freshOrder("6ba7b810-9dad-41d1-80b4-00c04fd430c4", "guest-retrycli01", tea)
	cmd.Attempt = "attempt-1"
	first := r.apply(CmdPlaceOrder, cmd)
	again := r.apply(CmdPlaceOrder, cmd) // committed twice: the retry after an unknown outcome
	var a, b successBody
	json.Unmarshal(first.Body, &a)
	json.Unmarshal(again.Body, &b)
	if first.Status != 200 || again.Status != 200 || a.OrderID != b.OrderID {
		t.Fatalf("first %+v, retry %+v", first, again)
	}
	if again.Replay || b.IdempotentReplay {
		t.Fatalf("internal retry of the guest's own request answered as a replay: %+v %s", again, again.Body)
	}
	cmd.Attempt = "attempt-2" // the guest resends
	resend := r.apply(CmdPlaceOrder, cmd)
	var c successBody
	json.Unmarshal(resend.Body, &c)
	if !resend.Replay || !c.IdempotentReplay || c.OrderID != a.OrderID {
		t.Fatalf("guest's resend = %+v %s, want a replay of order %d", resend, resend.Body, a.OrderID)
	}
}

var _ = raft.LogCommand

// applyV commits one command at an explicit version.
func (r *rv) applyV(typ raftfsm.CommandType, version uint8, payload any) Result {
	r.t.Helper()
	l := fzEntryV(r.next, typ, version, payload)
	r.next++
	res, _ := r.f.Apply(l).(raftfsm.Response)
	if res.Err != nil {
		r.t.Fatalf("apply type %d v%d: %v", typ, version, res.Err)
	}
	var out Result
	if err := json.Unmarshal(res.Data, &out); err != nil {
		r.t.Fatalf("decode result %s: %v", res.Data, err)
	}
	return out
}

// Item 7: an entry of an older version, replayed from the log after an
// upgrade, is applied exactly as the old build did (else a node that
// replays it diverges from one that applied it before the upgrade); the
// new rule holds from version 2 on.
func TestOlderCommandVersionsApplyTheOldWay(t *testing.T) {
	r := newRV(t)
	r.apply(CmdCheckout, checkoutCmd{SessionID: fzSession, Node: "a"})
	if res := r.applyV(CmdSetOrderStatus, 1, setOrderStatusCmd{OrderID: 12345, Status: store.StatusCooking, Node: "a"}); res.Status != 200 {
		t.Fatalf("v1 status change after checkout = %d %s, want the old 200", res.Status, res.Reason)
	}
	if res := r.applyV(CmdSetOrderStatus, 2, setOrderStatusCmd{OrderID: 12345, Status: store.StatusReady, Node: "a"}); res.Status != 410 {
		t.Fatalf("v2 status change after checkout = %d %s, want 410", res.Status, res.Reason)
	}
	r.apply(CmdRevokeToken, revokeTokenCmd{TokenID: "0123456789abcdef0123456789abcdef", TTLms: 60000})
	key := keyRevoked("0123456789abcdef0123456789abcdef")
	if res := r.applyV(CmdForceRelease, 2, forceReleaseCmd{Key: key, Node: "a"}); res.Status != 400 || res.Reason != "INVALID_KEY" || !r.lockHeld(key) {
		t.Fatalf("v2 release of %s = %d %s", key, res.Status, res.Reason)
	}
	if res := r.applyV(CmdForceRelease, 1, forceReleaseCmd{Key: key, Node: "a"}); res.Status != 200 || r.lockHeld(key) {
		t.Fatalf("v1 release of %s = %d %s, want the old 200", key, res.Status, res.Reason)
	}
	tea := admission.Normalize([]admission.Line{{MenuID: "tea", Quantity: 1}})
	r.apply(CmdUpsertMenu, upsertMenuCmd{Item: store.MenuItem{MenuID: "tea", Name: "烏龍茶", Price: 300, Available: false, Toppings: []store.Topping{}}})
	cmd := freshOrder("6ba7b810-9dad-41d1-80b4-00c04fd430c9", "guest-oldvercli1", tea)
	cmd.ExpectedTotal = fzPrice(1)
	if res := r.applyV(CmdPlaceOrder, 1, cmd); res.Reason != "OUT_OF_STOCK" {
		t.Fatalf("v1 unavailable item, wrong total = %s, want the old OUT_OF_STOCK", res.Reason)
	}
}

// Item 3 and the checkout answers: taxIncluded on begin, cancel and
// checkout; checkout stores and echoes the payment; checkout retried with
// its request id answers the same bill.
func TestCheckoutAnswersTaxAndPayment(t *testing.T) {
	r := newRV(t)
	rate := int64(10)
	begin := r.apply(CmdCheckoutBegin, checkoutCmd{SessionID: fzSession, LockTTLms: 60000, Node: "a", RequestID: "b1", TaxRatePercent: &rate})
	var st checkoutState
	json.Unmarshal(begin.Body, &st)
	// ramen+egg ×2 (2040) + tea (300) = 2340; tax inside: 2340×10/110 = 212.
	if st.Total != 2340 || st.Tax != 212 {
		t.Fatalf("begin bill: %s", begin.Body)
	}
	cancel := r.apply(CmdCheckoutCancel, checkoutCmd{SessionID: fzSession, Node: "a", RequestID: "c1", TaxRatePercent: &rate})
	json.Unmarshal(cancel.Body, &st)
	if st.Tax != 212 {
		t.Fatalf("cancel bill: %s", cancel.Body)
	}
	eight := int64(8)
	co := checkoutCmd{SessionID: fzSession, Node: "a", RequestID: "k1", Payment: "card", TaxRatePercent: &eight}
	done := r.apply(CmdCheckout, co)
	var d struct {
		Total, TaxIncluded int64
		Payment            *string
	}
	json.Unmarshal(done.Body, &d)
	if done.Status != 200 || d.TaxIncluded != 2340*8/108 || d.Payment == nil || *d.Payment != "card" {
		t.Fatalf("checkout: %d %s", done.Status, done.Body)
	}
	again := r.apply(CmdCheckout, co)
	if again.Status != 200 || string(again.Body) != string(done.Body) {
		t.Fatalf("retried checkout = %d %s, want the first bill", again.Status, again.Body)
	}
	var paid string
	r.query(func(db *sql.DB) error {
		return db.QueryRow(`SELECT payment FROM sessions WHERE session_id = ?`, fzSession).Scan(&paid)
	})
	if paid != "card" {
		t.Fatalf("stored payment %q", paid)
	}
	if res := r.apply(CmdCheckout, checkoutCmd{SessionID: fzSession2, Node: "a", Payment: "bitcoin"}); res.Status != 400 {
		t.Fatalf("checkout with an unknown payment = %d %s", res.Status, res.Reason)
	}
}

// Item 6 (checkout_lock_ttl = 0): a version-2 begin without a TTL still
// takes a lock that lapses by itself.
func TestCheckoutLockWithoutTTLStillLapses(t *testing.T) {
	r := newRV(t)
	res := r.apply(CmdCheckoutBegin, checkoutCmd{SessionID: fzSession3, Node: "a", RequestID: "b0"})
	var st checkoutState
	json.Unmarshal(res.Body, &st)
	if res.Status != 200 || st.ExpiresAt == nil || *st.ExpiresAt <= 0 {
		t.Fatalf("begin without a TTL: %d %s", res.Status, res.Body)
	}
}
