package store

import (
	"strings"
	"testing"
)

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
