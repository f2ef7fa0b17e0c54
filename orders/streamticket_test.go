package orders_test

import (
	"bufio"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"masterorder/api/apitest"
)

// The kitchen screen opens its EventSource with a stream ticket instead of
// its token: issued to a kitchen (or manager) token, usable on any node,
// once on each, only on the stream.
func TestKitchenStreamTicket(t *testing.T) {
	s := startStore(t, 3, withKitchenPassword(t))
	kt := kitchenLogin(t, s, 0)

	if r := s.do(0, "POST", "/api/kitchen/stream-ticket", nil, map[string]any{}); r.Status != 401 || r.reason(t) != "UNAUTHORIZED" {
		t.Fatalf("ticket without a token: %d %s", r.Status, r.Body)
	}
	if r := s.do(0, "POST", "/api/kitchen/stream-ticket", map[string]string{"Authorization": "Bearer " + kt}, map[string]any{"ttl": 3600}); r.Status != 400 || r.reason(t) != "INVALID_REQUEST" {
		t.Fatalf("ticket asked with a body: %d %s", r.Status, r.Body)
	}
	ticket := func(i int, tok string) string {
		t.Helper()
		r := s.do(i, "POST", "/api/kitchen/stream-ticket", map[string]string{"Authorization": "Bearer " + tok}, map[string]any{})
		var out struct{ Ticket, ExpiresAt string }
		r.json(t, &out)
		if r.Status != 200 || out.Ticket == "" {
			t.Fatalf("stream ticket: %d %s", r.Status, r.Body)
		}
		if _, err := time.Parse(time.RFC3339, out.ExpiresAt); err != nil {
			t.Fatalf("expiresAt %q: %v", out.ExpiresAt, err)
		}
		if strings.Contains(out.Ticket, tok) {
			t.Fatal("the ticket carries the token")
		}
		return out.Ticket
	}
	open := func(i int, query string) (int, string) {
		t.Helper()
		res, err := apitest.Client(t, &http.Client{Timeout: 20 * time.Second}).Get(s.url(i) + "/api/kitchen/stream?" + query)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if res.StatusCode != 200 {
			var b strings.Builder
			bufio.NewReader(res.Body).WriteTo(&b)
			return res.StatusCode, b.String()
		}
		line, _ := bufio.NewReader(res.Body).ReadString('\n')
		return res.StatusCode, line
	}

	tk := ticket(0, kt)
	// Issued on node 0, opened on node 1.
	if st, line := open(1, "ticket="+tk); st != 200 || !strings.HasPrefix(line, "retry:") {
		t.Fatalf("stream with a fresh ticket: %d %q", st, line)
	}
	if st, body := open(1, "ticket="+tk); st != 401 || !strings.Contains(body, "UNAUTHORIZED") {
		t.Fatalf("the same ticket again on the same node: %d %s", st, body)
	}
	// Only the stream takes it.
	if r := s.do(1, "GET", "/api/kitchen/orders?ticket="+ticket(1, kt), nil, nil); r.Status != 401 {
		t.Fatalf("ticket on /api/kitchen/orders: %d %s", r.Status, r.Body)
	}
	// A manager token gets one too; a bad ticket opens nothing.
	if st, _ := open(2, "ticket="+ticket(2, s.token)); st != 200 {
		t.Fatalf("manager's ticket: %d", st)
	}
	bad := []byte(ticket(0, kt))
	bad[5] ^= 'A' ^ 'B' // still base64url; another payload
	if st, _ := open(2, "ticket="+url.QueryEscape(string(bad))); st != 401 {
		t.Fatalf("tampered ticket: %d", st)
	}
	// ?token= keeps working for screens not yet reloaded.
	if st, _ := open(0, "token="+kt); st != 200 {
		t.Fatalf("?token=: %d", st)
	}
}
