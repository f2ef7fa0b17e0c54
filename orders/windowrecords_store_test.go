package orders_test

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"masterorder/orders"
)

// waitTopLevel waits until node 0 applied the store's feature level up to
// its build's (a new store's leader raises it within seconds).
func waitTopLevel(t *testing.T, s *store) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for n := s.c.Nodes[0]; n.FSM().FeatureLevel() < n.FSM().BuildLevel(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("feature level %d, build's %d", n.FSM().FeatureLevel(), n.FSM().BuildLevel())
		}
	}
}

// A guest's cooldown and the session's burst window are one record named
// by the order's index, not a key per phone and per session (placeOrder
// 6, windowrecords.go): the locks listing shows the record under windows:
// and no cooldown: key, the phone's next order in another session is
// refused 429 by the box that receives it, before proposing (no audit
// row: Apply never saw it), and another phone is not cooled down.
func TestCooldownIsARecordAndRefusesBeforeProposing(t *testing.T) {
	s := startStore(t, 3, func(_ int, c *orders.FileConfig) { c.Admission.Cooldown.Duration = time.Minute })
	s.seedMenu()
	waitTopLevel(t, s)
	g := s.guest(s.openSession("C1"))
	if r := g.order(0, newKey(), cart(line("tea", 1))); r.Status != 200 {
		t.Fatalf("first order: %d %s", r.Status, r.Body)
	}
	if l := locks(t, s, "cooldown:"); len(l) != 0 {
		t.Fatalf("cooldown keys per phone: %v", l)
	}
	recs := locks(t, s, "windows:")
	if len(recs) != 1 || !strings.Contains(recs[0]["value"].(string), `"clientId":"`+g.client+`"`) || recs[0]["expiresAt"] == "" {
		t.Fatalf("window records: %v, want one naming %s", recs, g.client)
	}
	g.sess = s.openSession("C2")
	r := g.order(0, newKey(), cart(line("tea", 1)))
	if r.Status != 429 || r.reason(t) != "COOLDOWN_ACTIVE" || r.Header.Get("Retry-After") == "" {
		t.Fatalf("same phone, other session: %d %s, want 429 COOLDOWN_ACTIVE", r.Status, r.Body)
	}
	if a := auditReasons(t, s); a["COOLDOWN_ACTIVE"] {
		t.Fatalf("the cooldown was judged by Apply (audit %v), not before proposing", a)
	}
	if r := s.guest(g.sess).order(0, newKey(), cart(line("tea", 1))); r.Status != 200 {
		t.Fatalf("another phone: %d %s", r.Status, r.Body)
	}
}

// A session's burst window held in a record is listed as its burst: key
// and refuses the session's next order before proposing; the locks API
// releases it (forceRelease 3), after which the session orders again, and
// a second release finds nothing.
func TestBurstWindowRecordIsListedAndReleased(t *testing.T) {
	s := startStore(t, 3, func(_ int, c *orders.FileConfig) {
		c.Admission.SessionBurst.Duration = time.Minute
		c.Admission.Cooldown.Duration = 0
	})
	s.seedMenu()
	waitTopLevel(t, s)
	sess := s.openSession("B1")
	if r := s.guest(sess).order(0, newKey(), cart(line("tea", 1))); r.Status != 200 {
		t.Fatalf("first order: %d %s", r.Status, r.Body)
	}
	l := locks(t, s, "burst:")
	if len(l) != 1 || l[0]["key"] != "burst:"+sess.ID || l[0]["expiresAt"] == "" || l[0]["revision"].(float64) == 0 {
		t.Fatalf("burst locks: %v, want burst:%s", l, sess.ID)
	}
	if r := s.guest(sess).order(0, newKey(), cart(line("gyoza", 1))); r.Status != 409 || r.reason(t) != "SESSION_ORDER_IN_PROGRESS" {
		t.Fatalf("second order in the burst window: %d %s", r.Status, r.Body)
	}
	if a := auditReasons(t, s); a["SESSION_ORDER_IN_PROGRESS"] {
		t.Fatalf("the burst window was judged by Apply (audit %v), not before proposing", a)
	}
	path := "/api/staff/locks/" + url.PathEscape("burst:"+sess.ID)
	var rel struct {
		Key      string
		Released bool
		Revision uint64
	}
	s.mustStaff(1, "DELETE", path, nil).json(t, &rel)
	if rel.Key != "burst:"+sess.ID || !rel.Released || rel.Revision == 0 {
		t.Fatalf("release: %+v", rel)
	}
	if l := locks(t, s, "burst:"); len(l) != 0 {
		t.Fatalf("burst locks after the release: %v", l)
	}
	if r := s.staff(1, "DELETE", path, nil); r.Status != 404 || r.reason(t) != "LOCK_NOT_FOUND" {
		t.Fatalf("second release: %d %s", r.Status, r.Body)
	}
	if r := s.guest(sess).order(0, newKey(), cart(line("gyoza", 1))); r.Status != 200 {
		t.Fatalf("order after the release: %d %s", r.Status, r.Body)
	}
	s.c.AssertIdentical(30 * time.Second)
}

func locks(t *testing.T, s *store, prefix string) []map[string]any {
	t.Helper()
	var out struct{ Locks []map[string]any }
	s.mustStaff(0, "GET", "/api/staff/locks?prefix="+url.QueryEscape(prefix), nil).json(t, &out)
	return out.Locks
}

func auditReasons(t *testing.T, s *store) map[string]bool {
	t.Helper()
	var audit struct{ Entries []json.RawMessage }
	s.mustStaff(0, "GET", "/api/staff/audit?limit=100", nil).json(t, &audit)
	out := map[string]bool{}
	for _, e := range audit.Entries {
		var a struct{ ReasonCode string }
		json.Unmarshal(e, &a)
		out[a.ReasonCode] = true
	}
	return out
}
