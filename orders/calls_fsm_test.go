package orders

import (
	"encoding/json"
	"testing"

	"masterorder/orders/store"
	"masterorder/raftfsm"
)

// TestCallGapAndDayCloseOnFSMTime: the 30 s between a session's calls is
// FSM time (a leader whose wall clock is 50 years off changes nothing):
// 1 ms short is CALL_TOO_SOON with the 1 ms left, on the dot a new call
// goes through. Day close counts open sessions and numbers days from 1.
func TestCallGapAndDayCloseOnFSMTime(t *testing.T) {
	f, commit := openClockedFSM(t)
	const fiftyYears = 50 * 365 * 24 * 3600 * 1000
	apply := func(typ raftfsm.CommandType, payload any, fsm int64) Result {
		t.Helper()
		p, _ := encodeCommand(payload, versionOf(typ))
		return commit(raftfsm.Command{Type: typ, Version: versionOf(typ), FSMTime: fsm, WallTime: fsm - fiftyYears, Payload: p})
	}
	t0 := int64(fzFSMTime)
	eachFzSetupCommand(t, func(typ raftfsm.CommandType, v any) { apply(typ, v, t0) })
	if r := apply(CmdGuestCall, guestCallCmd{SessionID: fzSession, Kind: "staff"}, t0); r.Status != 200 {
		t.Fatalf("first call: %+v", r)
	}
	if r := apply(CmdGuestCall, guestCallCmd{SessionID: fzSession, Kind: "water"}, t0+callGapMs-1); r.Status != 429 || r.Reason != "CALL_TOO_SOON" || r.RetryAfterMs != 1 {
		t.Fatalf("1 ms early: %+v", r)
	}
	// Another session is not held back by this one's call.
	if r := apply(CmdGuestCall, guestCallCmd{SessionID: fzSession2, Kind: "water"}, t0+1); r.Status != 200 {
		t.Fatalf("other session: %+v", r)
	}
	if r := apply(CmdGuestCall, guestCallCmd{SessionID: fzSession, Kind: "water"}, t0+callGapMs); r.Status != 200 {
		t.Fatalf("after 30 s: %+v", r)
	}
	var calls []store.Call
	f.Read(func(q raftfsm.Querier) (err error) { calls, err = store.ListCalls(q, store.CallOpen, "", 10); return })
	if len(calls) != 3 {
		t.Fatalf("open calls: %+v", calls)
	}
	if r := apply(CmdCloseDay, closeDayCmd{Label: "2026-12-01"}, t0+callGapMs+1); r.Status != 409 || r.Reason != "SESSIONS_OPEN" {
		t.Fatalf("close with open sessions: %+v", r)
	}
	var closed DayClosed
	r := apply(CmdCloseDay, closeDayCmd{Label: "2026-12-01", Force: true}, t0+callGapMs+2)
	if r.Status != 200 || json.Unmarshal(r.Body, &closed) != nil || closed.Day != 1 || closed.ClosedIndex != f.Applied() || closed.OpenSessions != 3 { // fzSetup opens three
		t.Fatalf("forced close: %+v %s", r, r.Body)
	}
	if r := apply(CmdCloseDay, closeDayCmd{Label: "2026-12-1", Force: true}, t0+callGapMs+3); r.Status != 400 {
		t.Fatalf("bad label: %+v", r)
	}
}
