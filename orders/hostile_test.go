package orders_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"masterorder/api/apitest"
	"masterorder/node"
	"masterorder/node/nodetest"
	"masterorder/node/pki"
	"masterorder/orders"
)

// A phone on the store Wi-Fi sends hundreds of malformed, oversized and
// wrong-typed requests to every endpoint the nodes serve (found from the
// router itself, so a new endpoint is covered the day it lands), with a
// valid staff token or a valid guest PIN and headers where that gets the
// request further in. Every answer must be a 4xx (JSON with a reason
// code under /api/), never a 5xx or a dropped connection; afterwards no
// node has halted and real orders still go through.

// hostileTLS gives the cluster mutual TLS on the Raft port, so forwarded
// writes take the real internal channel.
func hostileTLS(t *testing.T) func(int, *orders.FileConfig) {
	dir := t.TempDir()
	ca, err := pki.NewCA("hostile test cluster", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := ca.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b", "c"} {
		cert, key, err := ca.IssueNode(id, []string{"127.0.0.1"}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := pki.WriteNodeFiles(dir, id, cert, key); err != nil {
			t.Fatal(err)
		}
	}
	// Every node also serves HTTPS: half the storm goes there.
	https := map[string]string{}
	for _, id := range []string{"a", "b", "c"} {
		https[id] = fmt.Sprintf("127.0.0.1:%d", nodetest.FreePort(t))
	}
	return func(_ int, c *orders.FileConfig) {
		c.TLS = node.TLSConfig{CAFile: pki.CAFile(dir), CertFile: pki.NodeCertFile(dir, c.NodeID), KeyFile: pki.NodeKeyFile(dir, c.NodeID)}
		c.HTTPSAddr = https[c.NodeID]
		for j := range c.Peers {
			c.Peers[j].HTTPSAddr = https[c.Peers[j].ID]
		}
	}
}

type hostileReq struct {
	name    string
	method  string
	path    string
	hdr     map[string]string
	body    []byte
	chunked bool // send the body without a Content-Length
	want    int  // exact status expected, or 0 for any 4xx
}

// hostileJunkParams are path parameter values no endpoint accepts: each
// has a character outside [A-Za-z0-9_-] or is far too long.
var hostileJunkParams = []string{
	"a%20b", "..", "%2e%2e", "x%00y", "%0d%0aSet-Cookie:%20x=1", "'%20OR%201=1--",
	"%E3%83%A9%E3%83%BC%E3%83%A1%E3%83%B3", "%ff%fe", "a.b", "<script>", strings.Repeat("x", 3000), "1e9999",
}

// hostileBodies are malformed or wrong-typed JSON bodies.
var hostileBodies = []string{
	``, `{`, `}`, `[]`, `null`, `"x"`, `42`, `{"a":1}{"b":2}`, `{"items":"ramen"}`,
	`{"items":[{"menuId":5,"quantity":"2"}]}`, `{"items":[{"menuId":"ramen","quantity":1e999}]}`,
	`{"name":["x"],"price":{"yen":1}}`, `{"tableId":{"$ne":null}}`, `{"quantity":"ten"}`, `{"status":7}`,
	`{"password":null}`, `{"id":"a b","raftAddr":"nowhere","httpAddr":1}`,
	strings.Repeat("[", 5000) + strings.Repeat("]", 5000),
	`{"items":[` + strings.Repeat(`{"menuId":"ramen","quantity":1},`, 60) + `{"menuId":"ramen","quantity":1}]}`,
	"{\"name\":\"\xff\xfe\",\"price\":1}", "\x00\x01\x02", `{"__proto__":{"admin":true}}`,
}

// hostileRoutes lists the registered routes, by path with their methods.
func hostileRoutes(s *store) map[string][]string {
	byPath := map[string][]string{}
	for _, r := range s.c.Nodes[0].Echo().Routes() {
		if strings.HasPrefix(r.Method, "echo_route_") || r.Method == "" {
			continue
		}
		byPath[r.Path] = append(byPath[r.Path], r.Method)
	}
	return byPath
}

// fill puts v into every parameter of a route path.
func hostileFill(path, v string) string {
	parts := strings.Split(path, "/")
	for i, p := range parts {
		if strings.HasPrefix(p, ":") || p == "*" {
			parts[i] = v
		}
	}
	return strings.Join(parts, "/")
}

func hostileHasParam(path string) bool {
	return strings.Contains(path, "/:") || strings.HasSuffix(path, "*")
}

func TestHostileRequestsGetOnly4xx(t *testing.T) {
	withTLS := hostileTLS(t)
	s := startStore(t, 3, func(i int, c *orders.FileConfig) { withTLS(i, c); patient(i, c) })
	s.seedMenu()
	sess := s.openSession("H1")
	li, _ := s.c.WaitLeader(10 * time.Second)
	term := s.c.Nodes[li].Raft().CurrentTerm()

	staff := map[string]string{"Authorization": "Bearer " + s.token}
	guest := func() map[string]string {
		return map[string]string{"X-Session-PIN": sess.PIN, "X-MasterOrder-Client-Id": newClient(), "Idempotency-Key": newKey()}
	}
	auth := func(path string) map[string]string {
		switch {
		case strings.HasPrefix(path, "/api/staff/"), strings.HasPrefix(path, "/api/kitchen/"):
			return staff
		case strings.HasPrefix(path, "/api/guest/"):
			return guest()
		}
		return map[string]string{}
	}
	guestPath := "/api/guest/sessions/" + sess.ID
	big := bytes.Repeat([]byte("x"), 70<<10)
	bigJSON := []byte(`{"items":[{"menuId":"ramen","quantity":1,"toppings":["` + strings.Repeat("e", 70<<10) + `"]}]}`)

	var reqs []hostileReq
	add := func(r hostileReq) { reqs = append(reqs, r) }
	routes := hostileRoutes(s)
	paths := make([]string, 0, len(routes))
	for p := range routes {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		methods := routes[p]
		concrete := hostileFill(p, "zz-nothing-here")
		if p == "/api/guest/sessions/:id" || strings.HasPrefix(p, "/api/guest/sessions/:id/") {
			concrete = strings.Replace(p, ":id", sess.ID, 1)
		}
		// Oversized bodies, declared and chunked, on every route and method.
		for _, m := range methods {
			if m == "PUT" && p == "/api/staff/menu/:menuId/image" {
				// A picture may weigh 256 KiB; a bigger one is a bad
				// picture (400 INVALID_IMAGE, API.md), read no further.
				add(hostileReq{name: "oversized picture", method: m, path: concrete, hdr: auth(p), body: bytes.Repeat([]byte("x"), 300<<10), want: 400})
				continue
			}
			if m == "POST" && p == "/api/staff/menu" {
				// A whole menu may weigh 1 MiB (the CSV import): past it
				// 413, a big body that is no menu 400.
				add(hostileReq{name: "oversized menu", method: m, path: concrete, hdr: auth(p), body: bytes.Repeat([]byte("x"), 1<<20+1), want: 413})
				add(hostileReq{name: "a big body that is no menu", method: m, path: concrete, hdr: auth(p), body: bigJSON, want: 400})
				continue
			}
			if m == "GET" || m == "HEAD" {
				add(hostileReq{name: "oversized", method: m, path: concrete, hdr: auth(p), body: big, want: 413})
				continue
			}
			add(hostileReq{name: "oversized", method: m, path: concrete, hdr: auth(p), body: bigJSON, want: 413})
			if p != "/api/staff/logout" {
				add(hostileReq{name: "oversized chunked", method: m, path: hostileFill(p, "zz-nothing-here"), hdr: auth(p), body: bigJSON, chunked: true})
			}
		}
		// Methods the route does not have.
		for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
			has := false
			for _, have := range methods {
				has = has || have == m
			}
			if !has {
				add(hostileReq{name: "wrong method", method: m, path: concrete, hdr: auth(p), body: []byte(`{}`)})
			}
		}
		// Junk in every path parameter, with every method the route has.
		if hostileHasParam(p) {
			for _, v := range hostileJunkParams {
				for _, m := range methods {
					add(hostileReq{name: "junk param", method: m, path: hostileFill(p, v), hdr: auth(p), body: []byte(`{"name":"x","price":1,"quantity":1,"status":"COOKING","items":[{"menuId":"tea","quantity":1}]}`)})
				}
			}
		}
		// Malformed bodies on every write (logout and login aside: they
		// would end this test's session or feed the login limiter).
		for _, m := range methods {
			if m == "GET" || m == "HEAD" || p == "/api/staff/logout" {
				continue
			}
			target := concrete
			if !strings.HasPrefix(p, "/api/guest/") && hostileHasParam(p) && !strings.HasPrefix(p, "/api/staff/menu/") && !strings.HasPrefix(p, "/api/staff/stock/") {
				target = hostileFill(p, "zz-nothing-here") // routes that ignore the body fail on the id
			}
			if p == "/api/staff/orders" {
				target += "?sessionId=" + sess.ID
			}
			for _, b := range hostileBodies {
				if p == "/api/staff/login" && strings.Contains(b, "password") {
					continue
				}
				if m == "DELETE" && b == "" {
					continue // what every DELETE sends (DELETE /api/staff/cloud takes it)
				}
				add(hostileReq{name: "bad body", method: m, path: target, hdr: auth(p), body: []byte(b)})
			}
		}
	}
	// Queries and headers the handlers parse.
	for _, q := range []string{"limit=abc", "limit=-1", "limit=0", "limit=1e999", "limit=99999999999999999999", "status=OPEN", "status=ACTIVE&limit=x"} {
		add(hostileReq{name: "bad query", method: "GET", path: "/api/staff/sessions?" + q, hdr: staff})
	}
	for _, q := range []string{"limit=abc", "limit=-5", "limit=%00"} {
		add(hostileReq{name: "bad query", method: "GET", path: "/api/staff/audit?" + q, hdr: staff})
		add(hostileReq{name: "bad query", method: "GET", path: guestPath + "/orders?" + q, hdr: guest()})
	}
	for _, q := range []string{"requestId=nope", "requestId=550e8400-e29b-11d4-a716-446655440000", "requestId=%22%22", "requestId=" + strings.Repeat("a", 2000)} {
		add(hostileReq{name: "bad query", method: "GET", path: guestPath + "/orders?" + q, hdr: guest()})
	}
	for _, q := range []string{"status=EATEN", "status=ACCEPTED,,", "status=%00", "status=" + strings.Repeat("READY,", 500) + "X"} {
		add(hostileReq{name: "bad query", method: "GET", path: "/api/kitchen/orders?" + q, hdr: staff})
	}
	for _, q := range []string{"prefix=%00", "prefix=a%20b", "prefix=" + strings.Repeat("k", 600), "prefix=%ff"} {
		add(hostileReq{name: "bad query", method: "GET", path: "/api/staff/locks?" + q, hdr: staff})
	}
	for _, q := range []string{"", "text=", "text=" + strings.Repeat("あ", 600), "text=%ff%fe"} {
		add(hostileReq{name: "bad query", method: "GET", path: "/api/staff/qr?" + q, hdr: staff})
	}
	for _, q := range []string{"", "sessionId=", "sessionId=nope", "sessionId=" + strings.Repeat("A", 500), "sessionId=AAAAAAAAAAAAAAAAAAAAAA"} {
		add(hostileReq{name: "bad query", method: "POST", path: "/api/staff/orders?" + q, hdr: staff, body: []byte(`{"items":[{"menuId":"tea","quantity":1}]}`)})
	}
	for _, v := range []string{"abc", "-1", "1.5", "99999999999999999999999", "1 2", "0x10"} {
		add(hostileReq{name: "bad Last-Event-ID", method: "GET", path: "/api/kitchen/stream", hdr: map[string]string{"Authorization": staff["Authorization"], "Last-Event-ID": v}})
		add(hostileReq{name: "bad lastEventId", method: "GET", path: "/api/kitchen/stream?lastEventId=" + url.QueryEscape(v), hdr: staff})
	}
	order := []byte(`{"items":[{"menuId":"tea","quantity":1}]}`)
	for _, k := range []string{"", "nope", "550e8400-e29b-11d4-a716-446655440000", "550e8400e29b41d4a716446655440000", `"550e8400-e29b-41d4-a716-446655440000`, strings.Repeat("a", 5000)} {
		h := guest()
		h["Idempotency-Key"] = k
		add(hostileReq{name: "bad Idempotency-Key", method: "POST", path: guestPath + "/orders", hdr: h, body: order, want: 400})
	}
	for _, id := range []string{"", "guest-", "guest-short", "user-abcdefghij", "guest-abc def ghij", "guest-" + strings.Repeat("a", 65), "guest-ラーメンラーメンラーメン"} {
		h := guest()
		h["X-MasterOrder-Client-Id"] = id
		add(hostileReq{name: "bad client id", method: "POST", path: guestPath + "/orders", hdr: h, body: order, want: 400})
	}
	for _, b := range []string{
		`{"items":[{"menuId":"ramen","quantity":0}]}`, `{"items":[{"menuId":"ramen","quantity":100}]}`,
		`{"items":[{"menuId":"ramen","quantity":-1}]}`, `{"items":[{"menuId":"nope","quantity":1}]}`,
		`{"items":[{"menuId":"ramen","quantity":1,"toppings":["nori","nope"]}]}`, `{"items":[{"menuId":"tea","quantity":1,"toppings":["egg"]}]}`,
		`{"items":[{"menuId":"ramen","quantity":1}],"expectedTotal":-1}`, `{"items":[{"menuId":"ramen","quantity":1}],"expectedTotal":"900"}`,
		`{"items":[{"menuId":"ramen","quantity":1}],"allowRepeat":"yes"}`, `{"items":[{"menuId":"ramen","quantity":1,"memo":"x"}]}`,
		`{"items":[{"menuId":"ramen","quantity":1}],"extra":true}`, `{"items":[{"menuId":"ramen","quantity":1}]} x`,
	} {
		add(hostileReq{name: "bad order", method: "POST", path: guestPath + "/orders", hdr: guest(), body: []byte(b), want: 400})
		add(hostileReq{name: "bad staff order", method: "POST", path: "/api/staff/orders?sessionId=" + sess.ID, hdr: staff, body: []byte(b), want: 400})
	}
	// The web apps: traversal and unknown files.
	for _, app := range []string{"guest", "kitchen", "staff", "assets"} {
		for _, p := range []string{"/../../go.mod", "/%2e%2e/%2e%2e/go.mod", "/..%2f..%2fgo.mod", "/nope.js", "/.git/config", "/index.html%00.js", "/" + strings.Repeat("a/", 500)} {
			add(hostileReq{name: "web path", method: "GET", path: "/" + app + p, want: 404})
		}
	}
	// Staff and kitchen calls without a token.
	for _, p := range paths {
		if strings.HasPrefix(p, "/api/staff/") && p != "/api/staff/login" || strings.HasPrefix(p, "/api/kitchen/") {
			for _, m := range routes[p] {
				add(hostileReq{name: "no token", method: m, path: hostileFill(p, "zz"), body: []byte(`{}`), want: 401})
			}
		}
	}
	if len(reqs) < 300 {
		t.Fatalf("only %d hostile requests built", len(reqs))
	}

	caPEM, err := os.ReadFile(s.c.Configs[0].TLS.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	client := apitest.Client(t, &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16, TLSClientConfig: &tls.Config{RootCAs: roots}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }})
	base := func(k int) string {
		if k%2 == 1 {
			return "https://" + s.c.Configs[k%3].HTTPSAddr
		}
		return s.url(k % 3)
	}
	var mu sync.Mutex
	counts := map[int]int{}
	var failures []string
	jobs := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range jobs {
				r := reqs[k]
				status, body, err := hostileDo(client, base(k), r)
				mu.Lock()
				counts[status]++
				bad := ""
				switch {
				case err != nil:
					bad = "no answer: " + err.Error()
				case status >= 500:
					bad = fmt.Sprintf("server error %d", status)
				case r.want != 0 && status != r.want:
					bad = fmt.Sprintf("status %d, want %d", status, r.want)
				case status < 400 || status > 499:
					bad = fmt.Sprintf("status %d, want a 4xx", status)
				case strings.HasPrefix(r.path, "/api/") && !hostileErrorBody(body):
					bad = fmt.Sprintf("status %d without the error body", status)
				}
				if bad != "" {
					failures = append(failures, fmt.Sprintf("%s: %s %.120s %.60q on node %d: %s: %.200s", r.name, r.method, r.path, r.body, k%3, bad, body))
				}
				mu.Unlock()
			}
		}()
	}
	for k := range reqs {
		jobs <- k
	}
	close(jobs)
	wg.Wait()
	t.Logf("%d hostile requests: statuses %v", len(reqs), counts)
	sort.Strings(failures)
	for i, f := range failures {
		if i == 40 {
			t.Errorf("... and %d more", len(failures)-40)
			break
		}
		t.Error(f)
	}

	hostileRaw(t, s)

	// Nothing halted or restarted, the leader kept its term (or at least
	// every node serves), and real work still goes through on every node.
	for i, n := range s.c.Nodes {
		if err := n.FSM().Halted(); err != nil {
			t.Errorf("node %d halted: %v", i, err)
		}
		if r := s.do(i, "GET", "/healthz", nil, nil); r.Status != 200 {
			t.Errorf("node %d health: %d", i, r.Status)
		}
	}
	if li2, l2 := s.c.WaitLeader(10 * time.Second); li2 != li || l2.Raft().CurrentTerm() != term {
		t.Logf("leadership moved during the test: node %d term %d, was node %d term %d", li2, l2.Raft().CurrentTerm(), li, term)
	}
	for i := 0; i < 3; i++ {
		g := s.guest(sess)
		if r := g.order(i, newKey(), cart(line("ramen", 1, "egg"))); r.Status != 200 {
			t.Errorf("a real order on node %d after the storm: %d %s", i, r.Status, r.Body)
		}
		time.Sleep(1100 * time.Millisecond) // the session's burst window
	}
	s.mustStaff(2, "PUT", "/api/staff/menu/after", map[string]any{"name": "後", "price": 100})
	s.c.AssertIdentical(20 * time.Second)
}

func hostileErrorBody(b []byte) bool {
	var e struct {
		Allowed    *bool  `json:"allowed"`
		ReasonCode string `json:"reasonCode"`
	}
	return json.Unmarshal(b, &e) == nil && e.Allowed != nil && !*e.Allowed && e.ReasonCode != ""
}

// onlyReader hides a reader's type so net/http cannot learn its length:
// the body goes out chunked.
type onlyReader struct{ io.Reader }

func hostileDo(client *http.Client, base string, r hostileReq) (int, []byte, error) {
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
		if r.chunked {
			body = onlyReader{body}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, r.method, base+r.path, body)
	if err != nil {
		return 0, nil, err
	}
	if r.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range r.hdr {
		req.Header.Set(k, v)
	}
	res, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	return res.StatusCode, b, err
}

// hostileRaw speaks broken HTTP on the public port directly: what a
// script can send that net/http's client refuses to.
func hostileRaw(t *testing.T, s *store) {
	t.Helper()
	cases := map[string]string{
		"header injection":       "GET /api/cluster/status HTTP/1.1\r\nHost: x\r\nX-MasterOrder-Client-Id: guest-abcdefgh\rSet-Cookie: a=b\r\n\r\n",
		"bare LF header":         "GET /healthz HTTP/1.1\r\nHost: x\r\nX: a\nb\r\n\r\n",
		"no host":                "GET /healthz HTTP/1.1\r\n\r\n",
		"tls hello on http":      "\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03" + strings.Repeat("\x00", 40) + "\r\n\r\n",
		"garbage request line":   "\x00\x01\x02 / HTTP/1.1\r\nHost: x\r\n\r\n",
		"negative length":        "POST /api/staff/login HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
		"two lengths":            "POST /api/staff/login HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
		"length and chunked":     "POST /api/staff/login HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"broken chunk":           "POST /api/staff/login HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
		"huge header":            "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 2<<20) + "\r\n\r\n",
		"huge chunk size":        "PUT /api/staff/menu/x HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + s.token + "\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\nabc\r\n",
		"http/0.9":               "GET /\r\n\r\n",
		"unknown version":        "GET /healthz HTTP/7.3\r\nHost: x\r\n\r\n",
		"absolute uri elsewhere": "GET http://169.254.169.254/latest/meta-data HTTP/1.1\r\nHost: 169.254.169.254\r\n\r\n",
	}
	for name, raw := range cases {
		for i := 0; i < 3; i++ {
			status, err := hostileRawExchange(s.c.Configs[i].HTTPAddr, raw)
			if err != nil {
				t.Errorf("raw %s on node %d: %v", name, i, err)
				continue
			}
			// A closed connection without an answer is fine for garbage;
			// a 5xx is not, except net/http's own 505 for a request line
			// claiming HTTP/7.3, answered before any of our code runs.
			if status == 505 && name == "unknown version" {
				continue
			}
			if status >= 500 || status != 0 && status < 400 && name != "absolute uri elsewhere" {
				t.Errorf("raw %s on node %d: status %d", name, i, status)
			}
		}
	}
}

func hostileRawExchange(addr, raw string) (int, error) {
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(node.BodyReadTimeout + 10*time.Second))
	go func() { io.WriteString(conn, raw) }()
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			return 0, fmt.Errorf("no answer and no close within %v", node.BodyReadTimeout+10*time.Second)
		}
		return 0, nil // closed without an answer
	}
	res.Body.Close()
	return res.StatusCode, nil
}
