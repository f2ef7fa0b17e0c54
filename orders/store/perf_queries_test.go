package store

import (
	"fmt"
	"strings"
	"testing"
)

// StockOf answers, in one statement, exactly what GetStock answers sku by
// sku: tracked skus with their quantity (zero included), untracked ones
// absent, for carts of every size.
func TestStockOfMatchesGetStock(t *testing.T) {
	tx := migratedTx(t)
	var skus []string
	for i := range 50 {
		sku := fmt.Sprintf("sku%02d", i)
		skus = append(skus, sku)
		if i%3 != 0 { // every third untracked
			q := int64(i % 5) // some at zero
			if err := SetStock(tx, sku, &q); err != nil {
				t.Fatal(err)
			}
		}
	}
	for n := 0; n <= len(skus); n += 7 {
		got, err := StockOf(tx, skus[:n])
		if err != nil {
			t.Fatalf("%d skus: %v", n, err)
		}
		tracked := 0
		for _, sku := range skus[:n] {
			want, isTracked, err := GetStock(tx, sku)
			if err != nil {
				t.Fatal(err)
			}
			q, ok := got[sku]
			if ok != isTracked || q != want {
				t.Errorf("%d skus: %s = %d,%v; GetStock %d,%v", n, sku, q, ok, want, isTracked)
			}
			if isTracked {
				tracked++
			}
		}
		if len(got) != tracked {
			t.Errorf("%d skus: %d answered, %d tracked", n, len(got), tracked)
		}
	}
}

// Without orders_request (migration "no index on request_id"), the one
// query by request id still finds its rows through the session's index,
// not by scanning every order.
func TestRequestLookupUsesTheSessionIndex(t *testing.T) {
	tx := migratedTx(t)
	var n int
	if err := tx.QueryRow(`SELECT count(*) FROM sqlite_master WHERE name = 'orders_request'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("orders_request still there (%d, %v)", n, err)
	}
	plan := queryPlan(t, tx, `SELECT `+orderCols+` FROM orders WHERE session_id = ? AND request_id = ? ORDER BY seq DESC LIMIT ?`, "s", "r", 20)
	if !strings.Contains(plan, "orders_session") {
		t.Errorf("plan %q does not use orders_session", plan)
	}
	for _, r := range []string{"a", "b"} {
		if _, err := tx.Exec(`INSERT INTO orders(`+orderCols+`) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)`, len(r)+int(r[0]), int(r[0]), "s", "T", "ACCEPTED", "[]", 0, 0, 0, r, nil, "guest"); err != nil {
			t.Fatal(err)
		}
	}
	got, err := SessionOrders(tx, "s", 20, "b")
	if err != nil || len(got) != 1 || got[0].RequestID == nil || *got[0].RequestID != "b" {
		t.Fatalf("SessionOrders by request id: %+v %v", got, err)
	}
}
