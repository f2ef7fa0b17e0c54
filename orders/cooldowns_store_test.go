package orders_test

import (
	"encoding/json"
	"testing"
	"time"

	"masterorder/orders"
)

// A guest's cooldown is a record named by its order's index, not a key
// per phone (placeOrder 6, cooldowns.go): the locks listing shows it
// under cooldowns: with the phone's id, none under cooldown:, and the
// phone's next order in another session is refused 429 by the box that
// receives it, before proposing (no audit row: Apply never saw it).
func TestCooldownIsARecordAndRefusesBeforeProposing(t *testing.T) {
	s := startStore(t, 3, func(_ int, c *orders.FileConfig) { c.Admission.Cooldown.Duration = time.Minute })
	s.seedMenu()
	// The store proposes version 6 once its leader raised the feature
	// level to this build's (within seconds of its start).
	deadline := time.Now().Add(30 * time.Second)
	for n := s.c.Nodes[0]; n.FSM().FeatureLevel() < n.FSM().BuildLevel(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("feature level %d, build's %d", n.FSM().FeatureLevel(), n.FSM().BuildLevel())
		}
	}
	g := s.guest(s.openSession("C1"))
	if r := g.order(0, newKey(), cart(line("tea", 1))); r.Status != 200 {
		t.Fatalf("first order: %d %s", r.Status, r.Body)
	}
	locks := func(prefix string) []map[string]any {
		var out struct{ Locks []map[string]any }
		s.mustStaff(0, "GET", "/api/staff/locks?prefix="+prefix, nil).json(t, &out)
		return out.Locks
	}
	if l := locks("cooldown:"); len(l) != 0 {
		t.Fatalf("cooldown keys per phone: %v", l)
	}
	recs := locks("cooldowns:")
	if len(recs) != 1 || recs[0]["value"] != g.client || recs[0]["expiresAt"] == "" {
		t.Fatalf("cooldown records: %v, want one naming %s", recs, g.client)
	}
	g.sess = s.openSession("C2")
	r := g.order(0, newKey(), cart(line("tea", 1)))
	if r.Status != 429 || r.reason(t) != "COOLDOWN_ACTIVE" || r.Header.Get("Retry-After") == "" {
		t.Fatalf("same phone, other session: %d %s, want 429 COOLDOWN_ACTIVE", r.Status, r.Body)
	}
	var audit struct{ Entries []json.RawMessage }
	s.mustStaff(0, "GET", "/api/staff/audit?limit=100", nil).json(t, &audit)
	for _, e := range audit.Entries {
		var a struct{ ReasonCode string }
		json.Unmarshal(e, &a)
		if a.ReasonCode == "COOLDOWN_ACTIVE" {
			t.Fatalf("the cooldown was judged by Apply (audit %s), not before proposing", e)
		}
	}
	// Another phone is not cooled down.
	if r := s.guest(g.sess).order(0, newKey(), cart(line("tea", 1))); r.Status != 200 {
		t.Fatalf("another phone: %d %s", r.Status, r.Body)
	}
}
