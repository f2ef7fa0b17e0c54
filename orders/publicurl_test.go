package orders_test

import (
	"fmt"
	"net/http"
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

// With public_url naming the store's .local name, every table also gets
// a fallback address: the guest page at the box's own address, for a
// phone that cannot resolve .local (Android before 12, a guest network
// without multicast). The page answers there.
func TestGuestFallbackURLIsTheBoxAddress(t *testing.T) {
	s := startStore(t, 3, func(_ int, c *orders.FileConfig) {
		c.PublicURL, c.MDNSName = "http://masterorder.local:8080", "masterorder.local"
	})
	for i := range s.c.Nodes {
		var out struct {
			SessionID, GuestURL, GuestFallbackURL string
		}
		s.mustStaff(i, "POST", "/api/staff/sessions", map[string]string{"tableId": fmt.Sprintf("F%d", i)}).json(t, &out)
		want := s.url(i) + "/guest/?s=" + out.SessionID
		if out.GuestFallbackURL != want {
			t.Fatalf("node %d: guestFallbackUrl %q, want %q", i, out.GuestFallbackURL, want)
		}
		r := s.staff(i, "GET", "/api/staff/sessions", nil)
		if !strings.Contains(string(r.Body), `"guestFallbackUrl":"`+want+`"`) {
			t.Fatalf("node %d: sessions list without the fallback address: %s", i, r.Body)
		}
		res, err := http.Get(want)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 200 {
			t.Fatalf("node %d: the guest page at the fallback address: %d", i, res.StatusCode)
		}
	}
	// An address as public_url is already what every phone reaches.
	s2 := startStore(t, 1, func(_ int, c *orders.FileConfig) { c.PublicURL = "http://192.0.2.7:8080" })
	r := s2.mustStaff(0, "POST", "/api/staff/sessions", map[string]string{"tableId": "A1"})
	if strings.Contains(string(r.Body), "guestFallbackUrl") {
		t.Errorf("public_url is an address, yet a fallback: %s", r.Body)
	}
}
