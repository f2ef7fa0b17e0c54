package orders_test

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"masterorder/node"
	"masterorder/orders"
	"masterorder/raftfsm"
)

// The review findings (issue 14) seen through the HTTP API.

// cmdHold is a test-only command: the node named by holdNode blocks in
// Apply until released, so it lags the cluster by construction (no timing
// luck needed).
const cmdHold raftfsm.CommandType = 200

type holder struct {
	node    atomic.Int32 // index of the node that holds, -1: none
	release chan struct{}
	once    sync.Once
}

func (h *holder) let() { h.once.Do(func() { close(h.release) }) }

func newHolder() *holder {
	h := &holder{release: make(chan struct{})}
	h.node.Store(-1)
	return h
}

func (h *holder) options(i int) node.Options {
	o := orders.NodeOptions()
	domain := o.Register
	o.Register = func(reg *raftfsm.Registry) {
		domain(reg)
		reg.Register(cmdHold, "test.hold", func(ctx *raftfsm.ApplyContext, p []byte) ([]byte, error) {
			if int(h.node.Load()) == i {
				select {
				case <-h.release:
				case <-time.After(30 * time.Second): // never hang a test run
				}
			}
			return []byte(`{"status":200}`), nil
		})
	}
	return o
}

// holdFollower makes a follower stop applying at the next entry and
// returns its index; release lets it go on.
func (s *store) holdFollower(t *testing.T, h *holder) int {
	t.Helper()
	fi, _ := s.c.Follower()
	h.node.Store(int32(fi))
	t.Cleanup(h.let)
	_, leader := s.c.WaitLeader(10 * time.Second)
	// What the follower applied before the hold must be in its files, not
	// in an open group the held batch would keep from committing.
	if err := s.c.Nodes[fi].FSM().WaitApplied(t.Context(), leader.FSM().Handled()); err != nil {
		t.Fatal(err)
	}
	if _, err := leader.Propose(t.Context(), node.Proposal{Type: cmdHold, Version: 1}); err != nil {
		t.Fatal(err)
	}
	return fi
}

// Item 6: a replica that lags a menu write made through another box does
// not call the new item unknown (INVALID_ORDER): it catches up first.
// Item 4: a staff order committed through a lagging box answers the order,
// never an error (the old handler read it back and timed out).
func TestLaggingReplicaJudgesTheClusterMenuAndAnswersCommittedStaffOrders(t *testing.T) {
	h := newHolder()
	s := startStoreWith(t, 3, nil, h.options)
	s.seedMenu()
	sess := s.openSession("T1")
	g := s.guest(sess)
	li, _ := s.c.WaitLeader(10 * time.Second)
	fi := s.holdFollower(t, h)
	s.mustStaff(li, "PUT", "/api/staff/menu/udon", map[string]any{"name": "うどん", "price": 700})

	// The staff order is committed by the leader while fi cannot apply.
	r := s.staff(fi, "POST", "/api/staff/orders?sessionId="+sess.ID, cart(line("tea", 1)))
	if r.Status != 200 {
		t.Fatalf("committed staff order through a lagging box answered %d %s", r.Status, r.Body)
	}
	var so orderView
	r.json(t, &so)
	if so.OrderID == 0 || so.TableID != "T1" || so.Source != "staff" || len(so.Items) != 1 {
		t.Fatalf("staff order answer is not the order object: %s", r.Body)
	}

	done := make(chan resp, 1)
	go func() { done <- g.order(fi, newKey(), cart(line("udon", 1))) }()
	select {
	case r := <-done:
		t.Fatalf("lagging box judged the cart before catching up: %d %s", r.Status, r.Body)
	case <-time.After(300 * time.Millisecond):
	}
	h.let()
	r = <-done
	if r.Status != 200 {
		t.Fatalf("order for an item that exists cluster-wide, through a lagging box: %d %s", r.Status, r.Body)
	}
}

// Item 5 and item 6 (duplicate toppings); the checkout answers (payment,
// taxIncluded).
func TestLocksAPIToppingsAndCheckoutContract(t *testing.T) {
	s := startStore(t, 3, nil)
	s.seedMenu()
	sess := s.openSession("T1")
	for _, key := range []string{"catalog:version", "revoked:0123456789abcdef0123456789abcdef", "idem:x:y", "cloud:state", "lock:"} {
		if r := s.staff(1, "DELETE", "/api/staff/locks/"+strings.ReplaceAll(key, ":", "%3A"), nil); r.Status != 400 || r.reason(t) != "INVALID_KEY" {
			t.Errorf("DELETE lock %s = %d %s, want 400 INVALID_KEY", key, r.Status, r.Body)
		}
	}
	for _, key := range []string{"lock:session:nothing", "pinlock:client:nobody", "burst:nothing"} {
		if r := s.staff(1, "DELETE", "/api/staff/locks/"+key, nil); r.Status != 404 || r.reason(t) != "LOCK_NOT_FOUND" {
			t.Errorf("DELETE lock %s = %d %s, want 404 LOCK_NOT_FOUND", key, r.Status, r.Body)
		}
	}

	g := s.guest(sess)
	if r := g.order(0, newKey(), cart(line("ramen", 1, "egg", "egg"))); r.Status != 400 || r.reason(t) != "INVALID_ORDER" {
		t.Fatalf("duplicate toppings in a line = %d %s, want 400 INVALID_ORDER", r.Status, r.Body)
	}
	placed := g.order(0, newKey(), cart(line("ramen", 2, "egg")))
	if placed.Status != 200 {
		t.Fatalf("order: %d %s", placed.Status, placed.Body)
	}
	var ok success
	placed.json(t, &ok)

	base := "/api/staff/sessions/" + sess.ID + "/checkout"
	var bill struct {
		Total       int64   `json:"total"`
		TaxIncluded *int64  `json:"taxIncluded"`
		Payment     *string `json:"payment"`
	}
	for _, step := range []string{"/begin", "/cancel"} {
		s.mustStaff(2, "POST", base+step, nil).json(t, &bill)
		if bill.Total != 2040 || bill.TaxIncluded == nil || *bill.TaxIncluded != 185 { // 2040×10/110 = 185.45
			t.Fatalf("%s bill: total %d tax %v", step, bill.Total, bill.TaxIncluded)
		}
	}
	if r := s.staff(2, "POST", base, map[string]string{"payment": "bitcoin"}); r.Status != 400 || r.reason(t) != "INVALID_REQUEST" {
		t.Fatalf("checkout paid in bitcoin = %d %s, want 400 INVALID_REQUEST", r.Status, r.Body)
	}
	s.mustStaff(2, "POST", base, map[string]string{"payment": "qr"}).json(t, &bill)
	if bill.Payment == nil || *bill.Payment != "qr" || bill.TaxIncluded == nil || *bill.TaxIncluded != 185 {
		t.Fatalf("checkout answer: payment %v tax %v", bill.Payment, bill.TaxIncluded)
	}
	// Item 1 through the API: the paid bill's orders stay as they are.
	path := "/api/staff/orders/" + strconv.FormatInt(ok.OrderID, 10)
	if r := s.staff(1, "PATCH", path, map[string]string{"status": "CANCELLED"}); r.Status != 410 || r.reason(t) != "SESSION_CLOSED" {
		t.Fatalf("cancel after checkout = %d %s, want 410 SESSION_CLOSED", r.Status, r.Body)
	}
}
