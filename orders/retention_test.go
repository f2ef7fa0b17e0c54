package orders

import (
	"database/sql"
	"encoding/json"
	"testing"

	"masterorder/raftfsm"
)

// Retention is judged on FSM time inside Apply: rows written by a leader
// whose wall clock is 50 years behind are neither deleted by a later
// leader with a correct clock nor kept for ever; each goes exactly when it
// is older than the retention in FSM time.
func TestHousekeepingRetentionOnFSMTime(t *testing.T) {
	f, commit := openClockedFSM(t)
	const day = int64(24 * 3600 * 1000)
	const fiftyYears = 50 * 365 * day
	// apply commits one entry at FSM time fsm, stamped with wall clock wall.
	apply := func(typ raftfsm.CommandType, payload any, fsm, wall int64) Result {
		t.Helper()
		p, _ := json.Marshal(payload)
		return commit(raftfsm.Command{Type: typ, Version: 1, FSMTime: fsm, WallTime: wall, Payload: p})
	}
	count := func(q string) int {
		var n int
		if err := f.Query(func(db *sql.DB) error { return db.QueryRow(q).Scan(&n) }); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// The store's history so far, all stamped by a leader 50 years behind.
	t0 := int64(fzFSMTime)
	eachFzSetupCommand(t, func(typ raftfsm.CommandType, v any) { apply(typ, v, t0, t0-fiftyYears) })
	if r := apply(CmdCheckout, checkoutCmd{SessionID: fzSession, Node: "a"}, t0, t0-fiftyYears); r.Status != 200 {
		t.Fatalf("checkout: %+v", r)
	}
	audits := count(`SELECT count(*) FROM audit`)
	if audits == 0 {
		t.Fatal("no audit rows")
	}
	keep := housekeepingCmd{AuditKeepMs: 90 * day, ArchiveKeepMs: 400 * day, Limit: 1000}
	// A day later (FSM time) a leader with a correct wall clock: the
	// closed session's orders move to the archive, nothing is pruned.
	apply(CmdHousekeeping, keep, t0+day, t0+day)
	if n := count(`SELECT count(*) FROM orders_archive`); n != 1 {
		t.Fatalf("%d orders archived, want 1", n)
	}
	// 89 days later: still younger than the 90-day audit retention.
	apply(CmdHousekeeping, keep, t0+89*day, t0+89*day)
	if n := count(`SELECT count(*) FROM audit`); n != audits {
		t.Fatalf("%d of %d audit rows left 89 days in", n, audits)
	}
	// New rows written now, then 92 days in: the first rows go, the new
	// ones (stamped at day 89) stay.
	apply(CmdPINFailure, pinFailureCmd{SessionID: fzSession3, Client: fzClient, Node: "b"}, t0+89*day, t0+89*day)
	apply(CmdHousekeeping, keep, t0+92*day, t0-fiftyYears+92*day) // the old clock leads again
	if n := count(`SELECT count(*) FROM audit`); n != 1 {
		t.Fatalf("%d audit rows after 92 days, want only the one written on day 89", n)
	}
	if n := count(`SELECT count(*) FROM orders_archive`); n != 1 {
		t.Fatalf("archive pruned early: %d rows", n)
	}
	apply(CmdHousekeeping, keep, t0+402*day, t0+402*day)
	if n := count(`SELECT count(*) FROM orders_archive`); n != 0 {
		t.Fatalf("%d archived orders older than 400 days left", n)
	}
	if n := count(`SELECT count(*) FROM sessions WHERE session_id = '` + fzSession + `'`); n != 0 {
		t.Fatal("the closed session outlived its archived orders")
	}
}
