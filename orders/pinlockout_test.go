package orders_test

import (
	"testing"
)

// Fifty wrong PINs under rotating client ids lock a table (API.md). The
// attacker's script runs; the guests already seated — whose devices
// entered the right PIN before — keep reading the menu and ordering on
// their session credential; a forged credential opens nothing; and the
// staff's one tap ("unlock table / new PIN") lets new devices in with the
// new PIN while the old PIN and its credentials stop working.
func TestPINLockoutAttackLeavesSeatedGuestsServed(t *testing.T) {
	s := startStore(t, 3, nil)
	s.seedMenu()
	sess := s.openSession("L1")
	base := "/api/guest/sessions/" + sess.ID

	seated := newClient()
	r := secGuestCall(s, 0, "GET", base, seated, sess.PIN, nil)
	cred := r.Header.Get("X-Session-Credential")
	if r.Status != 200 || cred == "" {
		t.Fatalf("right PIN: %d %s credential %q", r.Status, r.Body, cred)
	}

	// The attack: 60 wrong PINs, a fresh client id each, over all nodes.
	locked := 0
	for i := 0; i < 60; i++ {
		r := secGuestCall(s, i%3, "GET", base, newClient(), wrongPIN(sess.PIN), nil)
		if r.Status == 429 {
			locked++
		} else if r.Status != 401 {
			t.Fatalf("wrong PIN %d: %d %s", i, r.Status, r.Body)
		}
	}
	if locked == 0 {
		t.Fatal("the session never locked")
	}
	if r := secGuestCall(s, 1, "GET", base, newClient(), sess.PIN, nil); r.Status != 429 || r.reason(t) != "PIN_LOCKED" {
		t.Fatalf("a new device with the right PIN during the lockout: %d %s", r.Status, r.Body)
	}

	// The seated guests carry on, on every node.
	withCred := func(node int, method, path, credential string, body any) resp {
		hdr := map[string]string{"X-Session-PIN": sess.PIN, "X-MasterOrder-Client-Id": seated, "X-Session-Credential": credential}
		if method == "POST" {
			hdr["Idempotency-Key"] = newKey()
		}
		return s.do(node, method, path, hdr, body)
	}
	for i := 0; i < 3; i++ {
		if r := withCred(i, "GET", base+"/menu", cred, nil); r.Status != 200 {
			t.Errorf("seated guest's menu on node %d: %d %s", i, r.Status, r.Body)
		}
	}
	if r := withCred(2, "POST", base+"/orders", cred, cart(line("tea", 1))); r.Status != 200 {
		t.Errorf("seated guest's order during the lockout: %d %s", r.Status, r.Body)
	}
	if r := withCred(0, "GET", base+"/orders", cred, nil); r.Status != 200 {
		t.Errorf("seated guest's history: %d %s", r.Status, r.Body)
	}
	for _, forged := range []string{"x", cred[:len(cred)-2] + "AA", cred + "A"} {
		if r := withCred(1, "GET", base, forged, nil); r.Status != 429 {
			t.Errorf("forged credential %q: %d %s", forged, r.Status, r.Body)
		}
	}

	// Staff: unlock the table with a new PIN.
	var fresh struct {
		SessionID, PIN string
	}
	s.mustStaff(1, "POST", "/api/staff/sessions/"+sess.ID+"/pin", nil).json(t, &fresh)
	if fresh.SessionID != sess.ID || len(fresh.PIN) != 4 {
		t.Fatalf("new PIN: %+v", fresh)
	}
	if r := secGuestCall(s, 2, "GET", base, newClient(), fresh.PIN, nil); r.Status != 200 {
		t.Errorf("a new device with the new PIN: %d %s", r.Status, r.Body)
	}
	if fresh.PIN != sess.PIN {
		if r := secGuestCall(s, 0, "GET", base, newClient(), sess.PIN, nil); r.Status != 401 {
			t.Errorf("the old PIN after the reset: %d %s", r.Status, r.Body)
		}
		if r := withCred(0, "GET", base+"/menu", cred, nil); r.Status == 200 {
			t.Errorf("a credential of the old PIN still opens the session")
		}
	}
	var sessions struct {
		Sessions []struct{ SessionID, PIN string }
	}
	s.mustStaff(0, "GET", "/api/staff/sessions?status=ACTIVE", nil).json(t, &sessions)
	for _, x := range sessions.Sessions {
		if x.SessionID == sess.ID && x.PIN != fresh.PIN {
			t.Errorf("staff list shows PIN %s, want %s", x.PIN, fresh.PIN)
		}
	}
}
