package orders_test

import (
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"masterorder/orders/staffauth"
)

// Security on a shared Wi-Fi, through the HTTP API of a 3-node cluster:
// staff tokens (missing, forged, expired, revoked), CSRF on cookie
// writes, PIN lockouts counted cluster-wide, one session's PIN never
// opening another, and the browser-facing security headers.

// secStaffCalls are staff and kitchen calls that must refuse a caller
// without a valid token, one per kind of route.
var secStaffCalls = []struct{ method, path, body string }{
	{"GET", "/api/staff/menu", ""},
	{"PUT", "/api/staff/menu/ramen", `{"name":"x","price":1}`},
	{"GET", "/api/staff/stock", ""},
	{"PUT", "/api/staff/stock/ramen", `{"quantity":1}`},
	{"GET", "/api/staff/sessions", ""},
	{"POST", "/api/staff/sessions", `{"tableId":"T9"}`},
	{"POST", "/api/staff/sessions/AAAAAAAAAAAAAAAAAAAAAA/checkout", ""},
	{"POST", "/api/staff/orders?sessionId=AAAAAAAAAAAAAAAAAAAAAA", `{"items":[{"menuId":"tea","quantity":1}]}`},
	{"PATCH", "/api/staff/orders/1", `{"status":"COOKING"}`},
	{"GET", "/api/staff/audit", ""},
	{"GET", "/api/staff/locks", ""},
	{"DELETE", "/api/staff/locks/lock:x", ""},
	{"GET", "/api/staff/qr?url=http://x/", ""},
	{"POST", "/api/staff/logout", ""},
	{"GET", "/api/kitchen/orders", ""},
	{"GET", "/api/kitchen/stream", ""},
}

func secIssuer(t *testing.T, s *store, now func() time.Time, ttl time.Duration) *staffauth.Issuer {
	t.Helper()
	secret, err := staffauth.DecodeSecret(s.domain[0].Staff.TokenSecret)
	if err != nil {
		t.Fatal(err)
	}
	return &staffauth.Issuer{Secret: secret, Now: now, TTL: ttl}
}

// secTamper flips one bit of a token's payload, keeping its signature.
func secTamper(tok string) string {
	payload, mac, _ := strings.Cut(tok, ".")
	b, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil || len(b) < 30 {
		return tok + "x"
	}
	b[len(b)-1] ^= 0x01 // the last byte of expiresAt: a later expiry
	return base64.RawURLEncoding.EncodeToString(b) + "." + mac
}

func TestStaffEndpointsRejectBadTokens(t *testing.T) {
	s := startStore(t, 3, nil)
	s.seedMenu()

	otherSecret := make([]byte, 32)
	rand.Read(otherSecret)
	forger := &staffauth.Issuer{Secret: otherSecret}
	forged, _, _ := forger.Issue()
	// Signed with the cluster's secret, but long expired: issued 13 hours
	// ago with the 12 h TTL, or a minute ago with a 1 s TTL.
	expired, _, _ := secIssuer(t, s, func() time.Time { return time.Now().Add(-13 * time.Hour) }, 0).Issue()
	expiredShort, _, _ := secIssuer(t, s, func() time.Time { return time.Now().Add(-time.Minute) }, time.Second).Issue()
	// The same issuer at the right time makes a token every node accepts:
	// the ones above fail for their expiry, not for their making.
	fresh, _, _ := secIssuer(t, s, nil, 0).Issue()
	real := s.login(2)

	bad := map[string]map[string]string{
		"no token":                 {},
		"empty bearer":             {"Authorization": "Bearer "},
		"basic auth":               {"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte("staff:pw-for-tests"))},
		"garbage":                  {"Authorization": "Bearer not-a-token"},
		"overlong":                 {"Authorization": "Bearer " + strings.Repeat("A", 5000)},
		"another secret":           {"Authorization": "Bearer " + forged},
		"tampered expiry":          {"Authorization": "Bearer " + secTamper(real)},
		"signature stripped":       {"Authorization": "Bearer " + strings.Split(real, ".")[0] + "."},
		"signature of zeros":       {"Authorization": "Bearer " + strings.Split(real, ".")[0] + "." + base64.RawURLEncoding.EncodeToString(make([]byte, 32))},
		"expired":                  {"Authorization": "Bearer " + expired},
		"expired, short ttl":       {"Authorization": "Bearer " + expiredShort},
		"expired cookie":           {"Cookie": staffauth.CookieToken + "=" + expired},
		"forged cookie":            {"Cookie": staffauth.CookieToken + "=" + forged},
		"bad bearer, good cookie":  {"Authorization": "Bearer x", "Cookie": staffauth.CookieToken + "=" + real},
		"token in another header":  {"X-Auth-Token": real},
		"bearer with control char": {"Authorization": "Bearer " + real[:10] + "\t" + real[10:]},
	}
	for name, hdr := range bad {
		for i, call := range secStaffCalls {
			var body any
			if call.body != "" {
				body = call.body
			}
			r := s.do(i%3, call.method, call.path, hdr, body)
			if r.Status != http.StatusUnauthorized || r.reason(t) != "UNAUTHORIZED" {
				t.Errorf("%s: %s %s on node %d: %d %s", name, call.method, call.path, i%3, r.Status, r.Body)
			}
		}
	}
	// ?token= is for EventSource GETs only; an expired or forged one is
	// refused there too, and it never authenticates a write.
	for _, tok := range []string{expired, forged, secTamper(real)} {
		if r := s.do(1, "GET", "/api/kitchen/orders?token="+tok, nil, nil); r.Status != 401 {
			t.Errorf("query token: %d %s", r.Status, r.Body)
		}
	}
	if r := s.do(1, "POST", "/api/staff/sessions?token="+real, nil, `{"tableId":"Q1"}`); r.Status != 401 {
		t.Errorf("query token on a write: %d %s", r.Status, r.Body)
	}
	// Controls: the real and the freshly issued token work on every node.
	for i := 0; i < 3; i++ {
		for _, tok := range []string{real, fresh} {
			if r := s.do(i, "GET", "/api/staff/menu", map[string]string{"Authorization": "Bearer " + tok}, nil); r.Status != 200 {
				t.Fatalf("valid token on node %d: %d %s", i, r.Status, r.Body)
			}
		}
		// ?token= is for the kitchen stream only (TestKitchenTokenOnManagerEndpoints).
		if r := s.do(i, "GET", "/api/kitchen/orders?token="+real, nil, nil); r.Status != 401 {
			t.Errorf("query token on the kitchen list, node %d: %d %s", i, r.Status, r.Body)
		}
	}
	// Nothing the refused writes carried reached the replica.
	r := s.mustStaff(0, "GET", "/api/staff/sessions", nil)
	if strings.Contains(string(r.Body), `"T9"`) || strings.Contains(string(r.Body), `"Q1"`) {
		t.Errorf("a refused write opened a session: %s", r.Body)
	}
}

// secLoginCookies logs in on node i and returns the two cookies.
func secLoginCookies(t *testing.T, s *store, i int) (token, csrf *http.Cookie) {
	t.Helper()
	r := s.do(i, "POST", "/api/staff/login", nil, map[string]string{"password": staffPassword})
	if r.Status != 200 {
		t.Fatalf("login: %d %s", r.Status, r.Body)
	}
	for _, c := range (&http.Response{Header: r.Header}).Cookies() {
		switch c.Name {
		case staffauth.CookieToken:
			token = c
		case staffauth.CookieCSRF:
			csrf = c
		}
	}
	if token == nil || csrf == nil {
		t.Fatalf("login set no cookies: %v", r.Header.Values("Set-Cookie"))
	}
	if !token.HttpOnly || token.SameSite != http.SameSiteStrictMode || csrf.SameSite != http.SameSiteStrictMode {
		t.Errorf("cookie attributes: token %+v, csrf %+v", token, csrf)
	}
	return token, csrf
}

func TestCookieWritesNeedTheCSRFToken(t *testing.T) {
	s := startStore(t, 3, nil)
	tok, csrf := secLoginCookies(t, s, 0)
	cookie := tok.Name + "=" + tok.Value + "; " + csrf.Name + "=" + csrf.Value
	for i := 0; i < 3; i++ {
		// A page on another site can make the browser send the cookie, but
		// cannot read mo_csrf to echo it.
		for name, hdr := range map[string]map[string]string{
			"no header":    {"Cookie": cookie},
			"wrong header": {"Cookie": cookie, staffauth.HeaderCSRF: "x" + csrf.Value},
			"empty header": {"Cookie": cookie, staffauth.HeaderCSRF: ""},
			"other token's value": {"Cookie": cookie, staffauth.HeaderCSRF: func() string {
				_, c := secLoginCookies(t, s, 1)
				return c.Value
			}()},
		} {
			r := s.do(i, "POST", "/api/staff/sessions", hdr, `{"tableId":"C`+strconv.Itoa(i)+`"}`)
			if r.Status != http.StatusForbidden || r.reason(t) != staffauth.ReasonCSRF {
				t.Errorf("node %d, %s: %d %s", i, name, r.Status, r.Body)
			}
		}
		// Reads need no CSRF token; writes with it go through, on any node.
		if r := s.do(i, "GET", "/api/staff/sessions", map[string]string{"Cookie": cookie}, nil); r.Status != 200 {
			t.Errorf("node %d cookie read: %d %s", i, r.Status, r.Body)
		}
		r := s.do(i, "POST", "/api/staff/sessions", map[string]string{"Cookie": cookie, staffauth.HeaderCSRF: csrf.Value}, `{"tableId":"C`+strconv.Itoa(i)+`"}`)
		if r.Status != 200 {
			t.Errorf("node %d cookie write with CSRF token: %d %s", i, r.Status, r.Body)
		}
	}
	// Only the three good writes opened sessions.
	r := s.mustStaff(2, "GET", "/api/staff/sessions", nil)
	var out struct {
		Sessions []struct{ TableID string } `json:"sessions"`
	}
	r.json(t, &out)
	if len(out.Sessions) != 3 {
		t.Errorf("%d sessions opened, want 3: %s", len(out.Sessions), r.Body)
	}
}

func TestLogoutRevokesTheTokenEverywhere(t *testing.T) {
	s := startStore(t, 3, nil)
	tok, csrf := secLoginCookies(t, s, 0)
	bearer := map[string]string{"Authorization": "Bearer " + tok.Value}
	cookie := map[string]string{"Cookie": tok.Name + "=" + tok.Value + "; " + csrf.Name + "=" + csrf.Value}
	for i := 0; i < 3; i++ {
		if r := s.do(i, "GET", "/api/staff/menu", bearer, nil); r.Status != 200 {
			t.Fatalf("before logout, node %d: %d %s", i, r.Status, r.Body)
		}
	}
	// Log out on another node than the one that issued the token.
	r := s.do(1, "POST", "/api/staff/logout", bearer, nil)
	if r.Status != http.StatusNoContent {
		t.Fatalf("logout: %d %s", r.Status, r.Body)
	}
	cleared := 0
	for _, c := range (&http.Response{Header: r.Header}).Cookies() {
		if (c.Name == staffauth.CookieToken || c.Name == staffauth.CookieCSRF) && c.MaxAge < 0 {
			cleared++
		}
	}
	if cleared != 2 {
		t.Errorf("logout cleared %d cookies: %v", cleared, r.Header.Values("Set-Cookie"))
	}
	// Revocation is a replicated write: every node refuses the token once
	// it has applied it, and from then on for good.
	deadline := time.Now().Add(5 * time.Second)
	for i := 0; i < 3; i++ {
		for {
			r := s.do(i, "GET", "/api/staff/menu", bearer, nil)
			if r.Status == 401 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %d still accepts a logged-out token: %d", i, r.Status)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	for i := 0; i < 3; i++ {
		for _, call := range secStaffCalls {
			for name, hdr := range map[string]map[string]string{"bearer": bearer, "cookie": cookie} {
				h := map[string]string{}
				for k, v := range hdr {
					h[k] = v
				}
				h[staffauth.HeaderCSRF] = csrf.Value
				var body any
				if call.body != "" {
					body = call.body
				}
				if r := s.do(i, call.method, call.path, h, body); r.Status != 401 || r.reason(t) != "UNAUTHORIZED" {
					t.Errorf("node %d, %s %s by %s after logout: %d %s", i, call.method, call.path, name, r.Status, r.Body)
				}
			}
		}
	}
	// Logging out one token leaves the others alone.
	for i := 0; i < 3; i++ {
		if r := s.staff(i, "GET", "/api/staff/menu", nil); r.Status != 200 {
			t.Errorf("another staff token on node %d: %d %s", i, r.Status, r.Body)
		}
	}
}

func secGuestCall(s *store, node int, method, path, client, pin string, body any) resp {
	s.t.Helper()
	hdr := map[string]string{"X-Session-PIN": pin}
	if client != "" {
		hdr["X-MasterOrder-Client-Id"] = client
	}
	if method == "POST" {
		hdr["Idempotency-Key"] = newKey()
	}
	return s.do(node, method, path, hdr, body)
}

// API.md: after 10 wrong PINs from one client id within 10 minutes every
// further attempt from it, right PIN or wrong, is 429 PIN_LOCKED with
// Retry-After; the 10th wrong one is still 401; the count is cluster-wide.
func TestWrongPINsLockTheClientOutClusterWide(t *testing.T) {
	s := startStore(t, 3, nil)
	s.seedMenu()
	sess := s.openSession("P1")
	client := newClient()
	path := "/api/guest/sessions/" + sess.ID
	calls := []struct {
		method, path string
		body         any
	}{
		{"GET", path, nil},
		{"GET", path + "/menu", nil},
		{"GET", path + "/orders", nil},
		{"POST", path + "/orders", cart(line("tea", 1))},
	}
	for n := 1; n <= 20; n++ {
		call := calls[n%len(calls)]
		node := n % 3 // switching boxes gains nothing
		r := secGuestCall(s, node, call.method, call.path, client, wrongPIN(sess.PIN), call.body)
		if n <= 10 {
			if r.Status != 401 || r.reason(t) != "INVALID_PIN" {
				t.Fatalf("wrong PIN #%d on node %d: %d %s", n, node, r.Status, r.Body)
			}
			continue
		}
		if r.Status != 429 || r.reason(t) != "PIN_LOCKED" {
			t.Fatalf("wrong PIN #%d on node %d: %d %s", n, node, r.Status, r.Body)
		}
		ra, err := strconv.Atoi(r.Header.Get("Retry-After"))
		if err != nil || ra < 1 || ra > 600 {
			t.Errorf("wrong PIN #%d: Retry-After %q", n, r.Header.Get("Retry-After"))
		}
	}
	// The right PIN does not help the locked client, on any node, on any
	// guest call.
	for node := 0; node < 3; node++ {
		for _, call := range calls {
			r := secGuestCall(s, node, call.method, call.path, client, sess.PIN, call.body)
			if r.Status != 429 || r.reason(t) != "PIN_LOCKED" || r.Header.Get("Retry-After") == "" {
				t.Errorf("right PIN from the locked client, %s %s on node %d: %d %s", call.method, call.path, node, r.Status, r.Body)
			}
		}
	}
	// Another guest of the same table is not locked out (the session has
	// seen far fewer than 50 wrong PINs).
	other := newClient()
	if r := secGuestCall(s, 1, "GET", path, other, sess.PIN, nil); r.Status != 200 {
		t.Errorf("another client with the right PIN: %d %s", r.Status, r.Body)
	}
	if r := secGuestCall(s, 2, "POST", path+"/orders", other, sess.PIN, cart(line("tea", 1))); r.Status != 200 {
		t.Errorf("another client's order: %d %s", r.Status, r.Body)
	}
}

// Without a client id the remote address is the client: a script that
// leaves the header out is counted all the same.
func TestWrongPINsWithoutClientIDCountByAddress(t *testing.T) {
	s := startStore(t, 3, nil)
	sess := s.openSession("P2")
	path := "/api/guest/sessions/" + sess.ID
	for n := 1; n <= 12; n++ {
		r := secGuestCall(s, n%3, "GET", path, "", wrongPIN(sess.PIN), nil)
		want := 401
		if n > 10 {
			want = 429
		}
		if r.Status != want {
			t.Fatalf("wrong PIN #%d without client id: %d %s", n, r.Status, r.Body)
		}
	}
	// Same address, a malformed client id: still the address.
	if r := secGuestCall(s, 0, "GET", path, "guest-!", sess.PIN, nil); r.Status != 429 {
		t.Errorf("malformed client id from the locked address: %d %s", r.Status, r.Body)
	}
}

// 50 wrong PINs for one session, from 50 different client ids, lock the
// session for everyone.
func TestWrongPINsLockTheSession(t *testing.T) {
	s := startStore(t, 3, nil)
	sess := s.openSession("P3")
	path := "/api/guest/sessions/" + sess.ID
	for n := 1; n <= 50; n++ {
		r := secGuestCall(s, n%3, "GET", path, newClient(), wrongPIN(sess.PIN), nil)
		if r.Status != 401 {
			t.Fatalf("wrong PIN #%d: %d %s", n, r.Status, r.Body)
		}
	}
	for node := 0; node < 3; node++ {
		r := secGuestCall(s, node, "GET", path, newClient(), sess.PIN, nil)
		if r.Status != 429 || r.reason(t) != "PIN_LOCKED" {
			t.Errorf("right PIN for the locked session on node %d: %d %s", node, r.Status, r.Body)
		}
	}
	// Other sessions are not affected.
	other := s.openSession("P4")
	if r := secGuestCall(s, 1, "GET", "/api/guest/sessions/"+other.ID, newClient(), other.PIN, nil); r.Status != 200 {
		t.Errorf("another session: %d %s", r.Status, r.Body)
	}
}

// A guest's PIN opens its own session only.
func TestPINOpensOnlyItsOwnSession(t *testing.T) {
	s := startStore(t, 3, nil)
	s.seedMenu()
	mine := s.openSession("M1")
	theirs := s.openSession("M2")
	for theirs.PIN == mine.PIN {
		theirs = s.openSession("M2")
	}
	// The other table has an order the guest must not see.
	g := s.guest(theirs)
	if r := g.order(0, newKey(), cart(line("ramen", 1, "egg"))); r.Status != 200 {
		t.Fatalf("their order: %d %s", r.Status, r.Body)
	}
	me := newClient()
	path := "/api/guest/sessions/" + theirs.ID
	for node := 0; node < 3; node++ {
		for _, call := range []struct {
			method, path string
			body         any
		}{
			{"GET", path, nil},
			{"GET", path + "/menu", nil},
			{"GET", path + "/orders", nil},
			{"POST", path + "/orders", cart(line("tea", 1))},
		} {
			for name, pin := range map[string]string{"my PIN": mine.PIN, "no PIN": "", "PIN twice": theirs.PIN + theirs.PIN} {
				r := secGuestCall(s, node, call.method, call.path, me, pin, call.body)
				if r.Status != 401 || r.reason(t) != "INVALID_PIN" {
					t.Errorf("%s on %s %s, node %d: %d %s", name, call.method, call.path, node, r.Status, r.Body)
				}
				if strings.Contains(string(r.Body), "orderId") || strings.Contains(string(r.Body), "M2") {
					t.Errorf("%s on %s: leaked %s", name, call.path, r.Body)
				}
			}
			me = newClient() // stay under the per-client lockout
		}
	}
	// Their history still holds only their one order, and mine none.
	if h := g.history(2, ""); len(h) != 1 {
		t.Errorf("their history: %d orders", len(h))
	}
	if h := s.guest(mine).history(1, ""); len(h) != 0 {
		t.Errorf("my history: %d orders", len(h))
	}
}

func TestSecurityHeadersOnEveryResponse(t *testing.T) {
	s := startStore(t, 3, patient)
	paths := []string{"/guest/", "/kitchen/", "/staff/", "/guest/index.html", "/assets/order-sdk.js", "/assets/style.css",
		"/api/cluster/status", "/healthz", "/api/staff/menu", "/api/guest/sessions/nope", "/no/such/page", "/"}
	for i := 0; i < 3; i++ {
		for _, p := range paths {
			r := s.do(i, "GET", p, nil, nil)
			if r.Status >= 500 || r.Status < 0 {
				t.Errorf("node %d GET %s: %d", i, p, r.Status)
			}
			csp := r.Header.Get("Content-Security-Policy")
			for _, want := range []string{"default-src 'self'", "script-src 'self'", "frame-ancestors 'none'", "object-src 'none'", "base-uri 'none'"} {
				if !strings.Contains(csp, want) {
					t.Errorf("node %d GET %s: CSP %q lacks %q", i, p, csp, want)
				}
			}
			for _, banned := range []string{"'unsafe-inline'", "'unsafe-eval'", "*"} {
				if strings.Contains(csp, banned) {
					t.Errorf("node %d GET %s: CSP %q allows %s", i, p, csp, banned)
				}
			}
			if got := r.Header.Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("node %d GET %s: X-Content-Type-Options %q", i, p, got)
			}
			if got := r.Header.Get("X-Frame-Options"); got != "DENY" {
				t.Errorf("node %d GET %s: X-Frame-Options %q", i, p, got)
			}
		}
		for _, app := range []string{"/guest/", "/kitchen/", "/staff/"} {
			r := s.do(i, "GET", app, nil, nil)
			if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") {
				t.Errorf("node %d GET %s: %d %s", i, app, r.Status, r.Header.Get("Content-Type"))
			}
			// The CSP forbids inline script, so the page must carry none.
			body := strings.ToLower(string(r.Body))
			for rest := body; ; {
				k := strings.Index(rest, "<script")
				if k < 0 {
					break
				}
				tag := rest[k:]
				end := strings.Index(tag, ">")
				if end < 0 || !strings.Contains(tag[:end], "src=") {
					t.Errorf("node %d %s: inline <script>", i, app)
				}
				rest = tag[1:]
			}
		}
	}
}

// A burst of concurrent guesses must not outrun the lockout: every wrong
// PIN a node has evaluated counts against the next guess on that node at
// once, not only after its failure has been committed and applied, so a
// node evaluates at most the limit (10 per client, 50 per session) and a
// right PIN sent in the same burst after the limit is refused. Without
// that, a phone firing all 10,000 PINs at once finds the right one.
func TestConcurrentPINGuessesStopAtTheLimit(t *testing.T) {
	s := startStore(t, 3, patient) // elections under its own burst are not its verdict
	type tally struct{ wrong, right, locked, other int }
	burst := func(node int, sessionID, pin string, client func(int) string, n int, rightAt func(int) bool) tally {
		var mu sync.Mutex
		var out tally
		var wg sync.WaitGroup
		sem := make(chan struct{}, 64)
		for k := 0; k < n; k++ {
			wg.Add(1)
			sem <- struct{}{}
			go func(k int) {
				defer wg.Done()
				defer func() { <-sem }()
				p := wrongPIN(pin)
				if rightAt(k) {
					p = pin
				}
				r := secGuestCall(s, node, "GET", "/api/guest/sessions/"+sessionID, client(k), p, nil)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case r.Status == 401:
					out.wrong++
				case r.Status == 200:
					out.right++
				case r.Status == 429 && r.reason(t) == "PIN_LOCKED":
					out.locked++
				default:
					out.other++
					t.Errorf("guess %d: %d %s", k, r.Status, r.Body)
				}
			}(k)
		}
		wg.Wait()
		return out
	}

	// One session, every guess from a new client id, all at one node; the
	// right PIN is tried again and again throughout.
	sess := s.openSession("G1")
	got := burst(0, sess.ID, sess.PIN, func(int) string { return newClient() }, 400, func(k int) bool { return k%20 == 19 })
	t.Logf("session burst at one node: %+v", got)
	if got.wrong > 50 {
		t.Errorf("%d wrong PINs evaluated for one session at one node, limit 50", got.wrong)
	}
	if got.wrong+got.right > 50+20 {
		t.Errorf("%d PINs evaluated in all", got.wrong+got.right)
	}
	if r := secGuestCall(s, 0, "GET", "/api/guest/sessions/"+sess.ID, newClient(), sess.PIN, nil); r.Status != 429 {
		t.Errorf("after the burst the session is not locked: %d %s", r.Status, r.Body)
	}

	// One client id, one node.
	sess2 := s.openSession("G2")
	client := newClient()
	got = burst(1, sess2.ID, sess2.PIN, func(int) string { return client }, 100, func(k int) bool { return k%10 == 9 })
	t.Logf("client burst at one node: %+v", got)
	if got.wrong > 10 {
		t.Errorf("%d wrong PINs evaluated for one client at one node, limit 10", got.wrong)
	}

	// One session, spread over all three nodes: each node may evaluate up
	// to the limit before the others' failures reach it, never more.
	sess3 := s.openSession("G3")
	var mu sync.Mutex
	var all tally
	var wg sync.WaitGroup
	for node := 0; node < 3; node++ {
		wg.Add(1)
		go func(node int) {
			defer wg.Done()
			got := burst(node, sess3.ID, sess3.PIN, func(int) string { return newClient() }, 200, func(k int) bool { return k%20 == 19 })
			mu.Lock()
			all.wrong, all.right, all.locked = all.wrong+got.wrong, all.right+got.right, all.locked+got.locked
			mu.Unlock()
		}(node)
	}
	wg.Wait()
	t.Logf("session burst over three nodes: %+v", all)
	if all.wrong > 3*50 {
		t.Errorf("%d wrong PINs evaluated for one session over three nodes", all.wrong)
	}
}
