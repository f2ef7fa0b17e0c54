package orders_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"masterorder/orders"
)

func TestStaffChangeThroughFollowerReadableEverywhere(t *testing.T) {
	s := startStore(t, 3, nil)
	_, _ = s.c.WaitLeader(5 * time.Second)
	fi, _ := s.c.Follower()
	s.mustStaff(fi, "PUT", "/api/staff/menu/ramen", map[string]any{"name": "醤油ラーメン", "nameEn": "Shoyu", "category": "noodles", "price": 900,
		"toppings": []map[string]any{{"toppingId": "egg", "name": "味玉", "price": 120}}})
	s.mustStaff(fi, "PUT", "/api/staff/stock/egg", map[string]any{"quantity": 5})
	for i := 0; i < 3; i++ {
		var menu struct {
			Items []struct {
				MenuID   string `json:"menuId"`
				Price    int64  `json:"price"`
				Toppings []struct {
					ToppingID string `json:"toppingId"`
				} `json:"toppings"`
			} `json:"items"`
		}
		s.mustStaff(i, "GET", "/api/staff/menu", nil).json(t, &menu)
		if len(menu.Items) != 1 || menu.Items[0].Price != 900 || len(menu.Items[0].Toppings) != 1 {
			t.Fatalf("node %d menu: %+v", i, menu)
		}
		if q := s.stock(i, "egg"); q == nil || *q != 5 {
			t.Fatalf("node %d egg stock %v", i, q)
		}
	}
	// null stops tracking.
	s.mustStaff(2, "PUT", "/api/staff/stock/egg", map[string]any{"quantity": nil})
	if q := s.stock(0, "egg"); q != nil {
		t.Fatalf("egg still tracked: %d", *q)
	}
}

func TestRestartAndSnapshotRebuildKeepIdenticalSQLite(t *testing.T) {
	s := startStore(t, 3, func(_ int, c *orders.FileConfig) {
		c.Raft.SnapshotThreshold = 64
		c.Raft.TrailingLogs = 16
		c.Raft.SnapshotInterval.Duration = 200 * time.Millisecond
	})
	s.seedMenu()
	li, _ := s.c.WaitLeader(5 * time.Second)
	restarted := (li + 1) % 3
	s.c.StopNode(restarted)
	// Far enough ahead that the stopped node needs a snapshot.
	for i := 0; i < 150; i++ {
		s.mustStaff((li+2)%3, "PUT", fmt.Sprintf("/api/staff/menu/item%03d", i), map[string]any{"name": fmt.Sprintf("品%d", i), "price": 100 + i})
	}
	sess := s.openSession("S1")
	g := s.guest(sess)
	if r := g.order(li, newKey(), cart(line("gyoza", 2))); r.Status != 200 {
		t.Fatalf("order: %d %s", r.Status, r.Body)
	}
	time.Sleep(500 * time.Millisecond) // let a snapshot and compaction happen
	s.c.StartNode(restarted)
	s.c.AssertIdentical(15 * time.Second)
	if idx := s.c.Nodes[restarted].Raft().Stats()["last_snapshot_index"]; idx == "0" {
		t.Fatal("the far-behind node was not brought up by a snapshot")
	}
	// A plain restart from files, too.
	other := (li + 2) % 3
	s.c.StopNode(other)
	s.mustStaff(li, "PUT", "/api/staff/stock/gyoza", map[string]any{"quantity": 3})
	s.c.StartNode(other)
	s.c.AssertIdentical(15 * time.Second)
}

// Bad input for every staff endpoint: 400 with a reason code, never 5xx.
func TestStaffBadInput(t *testing.T) {
	s := startStore(t, 3, patient)
	s.seedMenu()
	sess := s.openSession("B1")
	long := strings.Repeat("あ", 101)
	cases := []struct {
		method, path string
		body         any
		status       int
		reason       string
	}{
		{"PUT", "/api/staff/menu/ramen", `{"name":"x","price":"900"}`, 400, "INVALID_MENU_ITEM"},
		{"PUT", "/api/staff/menu/ramen", `{"price":900}`, 400, "INVALID_MENU_ITEM"},
		{"PUT", "/api/staff/menu/ramen", `{"name":"x"}`, 400, "INVALID_MENU_ITEM"},
		{"PUT", "/api/staff/menu/ramen", `{"name":"x","price":-1}`, 400, "INVALID_MENU_ITEM"},
		{"PUT", "/api/staff/menu/ramen", `{"name":"` + long + `","price":1}`, 400, "INVALID_MENU_ITEM"},
		{"PUT", "/api/staff/menu/ramen", `{"name":"x","price":1,"toppings":[{"toppingId":"a b","name":"y","price":1}]}`, 400, "INVALID_MENU_ITEM"},
		{"PUT", "/api/staff/menu/ramen", `{"name":"x","price":1,"toppings":[{"toppingId":"t","name":"y","price":-5}]}`, 400, "INVALID_MENU_ITEM"},
		{"PUT", "/api/staff/menu/ramen", `{"name":"x","price":1,"unknown":1}`, 400, "INVALID_MENU_ITEM"},
		{"PUT", "/api/staff/menu/ramen", `[]`, 400, "INVALID_MENU_ITEM"},
		{"PUT", "/api/staff/menu/" + strings.Repeat("x", 65), `{"name":"x","price":1}`, 400, "INVALID_ID"},
		{"PUT", "/api/staff/stock/gyoza", `{"quantity":-1}`, 400, "INVALID_STOCK"},
		{"PUT", "/api/staff/stock/gyoza", `{"quantity":"3"}`, 400, "INVALID_STOCK"},
		{"PUT", "/api/staff/stock/gyoza", `{"quantity":1.5}`, 400, "INVALID_STOCK"},
		{"PUT", "/api/staff/stock/gyoza", `{}`, 400, "INVALID_STOCK"},
		{"PUT", "/api/staff/stock/nothing", `{"quantity":1}`, 404, "SKU_NOT_FOUND"},
		{"POST", "/api/staff/sessions", `{"tableId":""}`, 400, "INVALID_TABLE"},
		{"POST", "/api/staff/sessions", `{"tableId":5}`, 400, "INVALID_TABLE"},
		{"POST", "/api/staff/sessions", `{}`, 400, "INVALID_TABLE"},
		{"GET", "/api/staff/sessions?status=OPEN", nil, 400, "INVALID_STATUS"},
		{"POST", "/api/staff/sessions/AAAAAAAAAAAAAAAAAAAAAA/checkout/begin", nil, 404, "SESSION_NOT_FOUND"},
		{"POST", "/api/staff/sessions/nope/checkout", nil, 404, "SESSION_NOT_FOUND"},
		{"PATCH", "/api/staff/orders/12345", `{"status":"COOKING"}`, 404, "ORDER_NOT_FOUND"},
		{"PATCH", "/api/staff/orders/abc", `{"status":"COOKING"}`, 404, "ORDER_NOT_FOUND"},
		{"PATCH", "/api/staff/orders/12345", `{"status":"EATEN"}`, 400, "INVALID_STATUS"},
		{"POST", "/api/staff/orders?sessionId=" + sess.ID, `{"items":[]}`, 400, "INVALID_ORDER"},
		{"POST", "/api/staff/orders?sessionId=AAAAAAAAAAAAAAAAAAAAAA", `{"items":[{"menuId":"tea","quantity":1}]}`, 404, "SESSION_NOT_FOUND"},
		{"GET", "/api/staff/audit?limit=-3", nil, 400, "INVALID_LIMIT"},
		{"GET", "/api/staff/audit?limit=x", nil, 400, "INVALID_LIMIT"},
		{"DELETE", "/api/staff/locks/lock:session:none", nil, 404, "LOCK_NOT_FOUND"},
		{"GET", "/api/staff/menu/unknown-route", nil, 404, ""},
	}
	for i, c := range cases {
		r := s.staff(i%3, c.method, c.path, c.body)
		if r.Status != c.status || (c.reason != "" && r.reason(t) != c.reason) {
			t.Errorf("%s %s %v: %d %s", c.method, c.path, c.body, r.Status, r.Body)
		}
	}
	if r := s.do(0, "GET", "/api/staff/menu", nil, nil); r.Status != 401 || r.reason(t) != "UNAUTHORIZED" {
		t.Errorf("no token: %d %s", r.Status, r.Body)
	}
	if r := s.do(0, "POST", "/api/staff/login", nil, `{"password":"wrong"}`); r.Status != 401 {
		t.Errorf("wrong password: %d %s", r.Status, r.Body)
	}
	if r := s.staff(1, "PUT", "/api/staff/menu/ramen", `{"name":"`+strings.Repeat("x", 70000)+`","price":1}`); r.Status != 413 || r.reason(t) != "BODY_TOO_LARGE" {
		t.Errorf("oversized: %d %s", r.Status, r.Body)
	}
}

func TestOrderStatusCheckoutAndAudit(t *testing.T) {
	s := startStore(t, 3, nil)
	s.seedMenu()
	sess := s.openSession("T9")
	g := s.guest(sess)
	r := g.order(0, newKey(), cart(line("gyoza", 3), line("ramen", 1, "egg")))
	var o success
	r.json(t, &o)
	if *s.stock(1, "gyoza") != 7 {
		t.Fatal("stock not taken")
	}
	path := fmt.Sprintf("/api/staff/orders/%d", o.OrderID)
	for _, st := range []string{"COOKING", "READY", "COOKING", "SERVED"} {
		s.mustStaff(1, "PATCH", path, map[string]string{"status": st})
	}
	if r := s.staff(2, "PATCH", path, map[string]string{"status": "CANCELLED"}); r.Status != 409 || r.reason(t) != "INVALID_TRANSITION" {
		t.Fatalf("cancel after served: %d %s", r.Status, r.Body)
	}
	if r := s.staff(2, "PATCH", path, map[string]string{"status": "ACCEPTED"}); r.Status != 409 {
		t.Fatalf("two steps back: %d %s", r.Status, r.Body)
	}
	// A staff order without a key, then cancelled: stock comes back.
	r = s.mustStaff(2, "POST", "/api/staff/orders?sessionId="+sess.ID, cart(line("gyoza", 2)))
	var so success
	r.json(t, &so)
	if *s.stock(0, "gyoza") != 5 {
		t.Fatal("staff order did not take stock")
	}
	s.mustStaff(0, "PATCH", fmt.Sprintf("/api/staff/orders/%d", so.OrderID), map[string]string{"status": "CANCELLED"})
	if *s.stock(1, "gyoza") != 7 {
		t.Fatal("cancel did not put stock back")
	}
	// Kitchen sees the open orders of active sessions.
	var k struct{ Orders []orderView }
	s.mustStaff(2, "GET", "/api/kitchen/orders", nil).json(t, &k)
	if len(k.Orders) != 0 {
		t.Fatalf("kitchen: %+v", k.Orders)
	}
	// Checkout: the bill skips the cancelled order; then 410 for guests.
	s.mustStaff(0, "POST", "/api/staff/sessions/"+sess.ID+"/checkout/begin", nil)
	var locks struct {
		Locks []struct{ Key, ExpiresAt string } `json:"locks"`
	}
	s.mustStaff(1, "GET", "/api/staff/locks?prefix=lock:", nil).json(t, &locks)
	if len(locks.Locks) != 1 || locks.Locks[0].Key != "lock:session:"+sess.ID {
		t.Fatalf("locks: %+v", locks)
	}
	var bill struct {
		Total  int64
		Orders []orderView
	}
	s.mustStaff(2, "POST", "/api/staff/sessions/"+sess.ID+"/checkout", nil).json(t, &bill)
	if bill.Total != 3*450+1020 || len(bill.Orders) != 2 {
		t.Fatalf("bill: %+v", bill)
	}
	if r := s.do(1, "GET", "/api/guest/sessions/"+sess.ID+"/orders", map[string]string{"X-Session-PIN": sess.PIN}, nil); r.Status != 410 {
		t.Fatalf("after checkout: %d", r.Status)
	}
	var audit struct {
		Entries []struct {
			ReasonCode string `json:"reasonCode"`
			Node       string `json:"node"`
		} `json:"entries"`
	}
	s.mustStaff(0, "GET", "/api/staff/audit?limit=10", nil).json(t, &audit)
	if len(audit.Entries) < 2 || audit.Entries[0].ReasonCode != "CHECKED_OUT" {
		t.Fatalf("audit: %+v", audit.Entries)
	}
}
