package orders_test

import (
	"strings"
	"testing"

	"masterorder/orders"
)

// With public_url set, the table's guestUrl (and so its QR code) is the
// store's one address, on every box, and pages loaded through it may call
// the boxes directly (CORS) when they fail over.
func TestGuestURLUsesPublicURL(t *testing.T) {
	const public = "http://order.test:8080"
	s := startStore(t, 3, func(_ int, c *orders.FileConfig) { c.PublicURL = public + "/" })
	for i := range s.c.Nodes {
		var out struct {
			SessionID, GuestURL string
		}
		s.mustStaff(i, "POST", "/api/staff/sessions", map[string]string{"tableId": "P1"}).json(t, &out)
		if out.GuestURL != public+"/guest/?s="+out.SessionID {
			t.Fatalf("node %d: guestUrl %q", i, out.GuestURL)
		}
		r := s.staff(i, "GET", "/api/staff/sessions", nil)
		if !strings.Contains(string(r.Body), `"guestUrl":"`+public+`/guest/?s=`+out.SessionID+`"`) {
			t.Fatalf("node %d: sessions list without the public guestUrl: %s", i, r.Body)
		}
		p := s.do(i, "OPTIONS", "/api/guest/sessions/x/orders", map[string]string{"Origin": public, "Access-Control-Request-Method": "POST"}, nil)
		if p.Header.Get("Access-Control-Allow-Origin") != public {
			t.Fatalf("node %d does not allow the public origin: %d %v", i, p.Status, p.Header)
		}
	}
}
