package browsertest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"masterorder/api/apitest"
	"masterorder/internal/chromiumtest"
	"masterorder/node"
	"masterorder/node/nodetest"
	"masterorder/orders"
	"masterorder/orders/orderstest"
	"masterorder/update"

	"github.com/google/uuid"
)

const staffPassword = "browser-test-password"

// shopName is the test store's [shop] name.
const shopName = "らーめん 田中"

func passwordHash(t testing.TB) string { return orderstest.PasswordHash(t, staffPassword) }

// ---------------------------------------------------------------- the store

// store is a running three-node cluster with the domain attached and the
// demo menu loaded (the ramen shop of `masterorder demo`), named shopName.
type store struct {
	t     *testing.T
	c     *nodetest.Cluster
	svcs  []*orders.Service
	token string
	hc    *http.Client
}

func startStore(t *testing.T) *store {
	t.Helper()
	return startStoreWith(t, nil)
}

// startStoreWith is startStore with every box's file changed by mutate.
func startStoreWith(t *testing.T, mutate func(c *orders.FileConfig)) *store {
	t.Helper()
	st := orderstest.StartBefore(t, 3, func(_ int, c *orders.FileConfig) {
		c.Staff.KitchenPasswordHash = kitchenHash(t)
		c.Shop.Name = shopName
		if mutate != nil {
			mutate(c)
		}
	}, nil, withUpdates(t), orders.Options{StaffPasswordHash: passwordHash(t)})
	s := &store{t: t, c: st.Cluster, svcs: st.Svcs, hc: apitest.Client(t, &http.Client{Timeout: 10 * time.Second})}
	li, _ := s.c.WaitLeader(10 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, _, err := s.svcs[li].SeedDemo(ctx); err != nil {
		t.Fatalf("seed the demo menu: %v", err)
	}
	s.c.WaitConverged(10 * time.Second)
	for i := range s.c.Nodes {
		s.waitReady(i)
	}
	s.token = s.login(li)
	return s
}

// withUpdates gives each box its updates' routes, as every member has
// (cli/member.go): the Boxes page asks for them.
func withUpdates(t *testing.T) func(i int, nd *node.Node) {
	return func(i int, nd *node.Node) {
		if _, err := update.New(nd, update.Options{Version: "1.0.0"}); err != nil {
			t.Fatalf("update on node %d: %v", i, err)
		}
	}
}

func (s *store) url(i int) string { return "http://" + s.c.Configs[i].HTTPAddr }

// leader is the index of the current leader.
func (s *store) leader() int {
	i, _ := s.c.WaitLeader(10 * time.Second)
	return i
}

func (s *store) waitReady(i int) {
	s.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if r := s.call(i, "GET", "/readyz", nil, nil); r.status == 200 {
			return
		}
		time.Sleep(25 * time.Millisecond)
	}
	s.t.Fatalf("node %d not ready within 10s", i)
}

// apiResp is an orderstest.Resp under the names these tests use.
type apiResp struct {
	status int
	header http.Header
	body   []byte
}

func toAPIResp(r orderstest.Resp) apiResp {
	return apiResp{status: r.Status, header: r.Header, body: r.Body}
}

func (r apiResp) decode(t testing.TB, v any) {
	t.Helper()
	orderstest.Resp{Body: r.body}.Decode(t, v)
}

func (r apiResp) reason() string { return orderstest.Resp{Body: r.body}.Reason() }

// call is one HTTP request to node i; status -1 when it did not answer.
func (s *store) call(i int, method, path string, hdr map[string]string, body any) apiResp {
	s.t.Helper()
	return toAPIResp(orderstest.Do(s.t, s.hc, method, s.url(i)+path, hdr, body))
}

func (s *store) login(i int) string {
	s.t.Helper()
	r := s.call(i, "POST", "/api/staff/login", nil, map[string]string{"password": staffPassword})
	if r.status != 200 {
		s.t.Fatalf("login on node %d: %d %s", i, r.status, r.body)
	}
	var out struct{ Token string }
	r.decode(s.t, &out)
	return out.Token
}

func (s *store) staff(i int, method, path string, body any) apiResp {
	s.t.Helper()
	return s.call(i, method, path, map[string]string{"Authorization": "Bearer " + s.token}, body)
}

type session struct {
	SessionID string `json:"sessionId"`
	TableID   string `json:"tableId"`
	PIN       string `json:"pin"`
	GuestURL  string `json:"guestUrl"`
}

func (s *store) openSession(i int, table string) session {
	s.t.Helper()
	r := s.staff(i, "POST", "/api/staff/sessions", map[string]string{"tableId": table})
	if r.status != 200 {
		s.t.Fatalf("open table %s on node %d: %d %s", table, i, r.status, r.body)
	}
	var out session
	r.decode(s.t, &out)
	return out
}

type orderLine struct {
	MenuID   string              `json:"menuId"`
	Quantity int                 `json:"quantity"`
	Toppings []string            `json:"toppings"`
	Options  map[string][]string `json:"options,omitempty"`
	Note     string              `json:"note,omitempty"`
}

type order struct {
	OrderID    int64  `json:"orderId"`
	SessionID  string `json:"sessionId"`
	TableID    string `json:"tableId"`
	Status     string `json:"status"`
	TotalPrice int64  `json:"totalPrice"`
	RequestID  string `json:"requestId"`
	Items      []struct {
		MenuID   string `json:"menuId"`
		Quantity int    `json:"quantity"`
		Toppings []struct {
			ToppingID string `json:"toppingId"`
		} `json:"toppings"`
	} `json:"items"`
}

func uuidV4() string { return uuid.NewString() }

func newClientID() string {
	var b [18]byte
	rand.Read(b[:])
	return "guest-" + base64.RawURLEncoding.EncodeToString(b[:])
}

// guestOrder places an order as a guest through node i, retrying the same
// Idempotency-Key through the given nodes while the cluster has no quorum
// or a node does not answer (as order-sdk.js does); it returns the order id.
func (s *store) guestOrder(nodes []int, sess session, lines []orderLine, within time.Duration) int64 {
	s.t.Helper()
	hdr := map[string]string{
		"Idempotency-Key":         uuidV4(),
		"X-MasterOrder-Client-Id": newClientID(),
		"X-Session-PIN":           sess.PIN,
	}
	body := map[string]any{"items": lines}
	deadline := time.Now().Add(within)
	var last apiResp
	for try := 0; time.Now().Before(deadline); try++ {
		last = s.call(nodes[try%len(nodes)], "POST", "/api/guest/sessions/"+sess.SessionID+"/orders", hdr, body)
		if last.status == 200 {
			var out struct{ OrderID int64 }
			last.decode(s.t, &out)
			return out.OrderID
		}
		if last.status != -1 && last.status != 503 && last.status != 429 && last.status != 409 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.t.Fatalf("guest order for %s: %d %s", sess.TableID, last.status, last.body)
	return 0
}

// guestOrders is the session's order history as node i answers it.
func (s *store) guestOrders(i int, sess session) (int, []order) {
	s.t.Helper()
	r := s.call(i, "GET", "/api/guest/sessions/"+sess.SessionID+"/orders?limit=200", map[string]string{"X-Session-PIN": sess.PIN}, nil)
	if r.status != 200 {
		return r.status, nil
	}
	var out struct{ Orders []order }
	r.decode(s.t, &out)
	return r.status, out.Orders
}

// ---------------------------------------------------------------- the browser

// browserBudget bounds one test's browser: past it the browser is killed and
// whatever waits on it fails. A liveness bound: a flow of two minutes on a
// quiet machine takes three at load 25.
const browserBudget = 5 * time.Minute

type browser struct {
	t   *testing.T
	ctx context.Context
}

// startBrowser starts a headless Chromium with a fresh profile for this
// test. It is stopped, with every child process, when the test ends.
func startBrowser(t *testing.T) *browser {
	t.Helper()
	return startBrowserFor(t, browserBudget)
}

// startBrowserFor is startBrowser with another budget (tests that wait out
// the kitchen's 45-second silence check).
func startBrowserFor(t *testing.T, budget time.Duration, extra ...chromedp.ExecAllocatorOption) *browser {
	t.Helper()
	path := chromiumtest.Path(t)
	dir := t.TempDir()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.UserDataDir(dir),
		chromedp.Env("TMPDIR="+chromiumtest.TempDir(t)),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-proxy-server", true),
		chromedp.WindowSize(1024, 768),
		// A Japanese phone unless a test says otherwise (the guest app
		// starts in the browser's language).
		chromedp.Flag("lang", "ja-JP"),
		chromedp.Flag("accept-lang", "ja-JP,ja"),
	)
	opts = append(opts, extra...)
	parent, stop := context.WithTimeout(context.Background(), budget)
	actx, acancel := chromedp.NewExecAllocator(parent, opts...)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		bcancel()
		acancel() // kills the browser and waits for it
		stop()
		if n := killLeftovers(dir); n > 0 {
			t.Logf("killed %d chromium processes left over after the browser stopped", n)
		}
	})
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start %s: %v", path, err)
	}
	return &browser{t: t, ctx: bctx}
}

// killLeftovers kills the processes (the browser's children, which can
// outlive it) that run with this test's profile directory; it returns how
// many there were.
func killLeftovers(dir string) int {
	want := []byte("--user-data-dir=" + dir)
	killed := 0
	for pass := 0; pass < 3; pass++ {
		entries, err := os.ReadDir("/proc")
		if err != nil {
			return killed
		}
		found := 0
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == os.Getpid() {
				continue
			}
			cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
			if err != nil {
				continue
			}
			for _, arg := range bytes.Split(cmdline, []byte{0}) {
				if bytes.Equal(arg, want) {
					syscall.Kill(pid, syscall.SIGKILL)
					found++
					break
				}
			}
		}
		if found == 0 {
			return killed
		}
		killed += found
		time.Sleep(20 * time.Millisecond)
	}
	return killed
}

// tab is one page of the browser.
type tab struct {
	t    *testing.T
	name string
	ctx  context.Context

	mu      sync.Mutex
	console []string
}

// open opens url in a new tab with a viewport of w×h CSS pixels. Each tab
// is its own device: a browser context of its own, so no storage or
// cookies are shared between tabs. The page's console is kept and printed
// if the test fails.
func (b *browser) open(name, url string, w, h int64) *tab {
	b.t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithNewBrowserContext())
	tb := &tab{t: b.t, name: name, ctx: ctx}
	b.t.Cleanup(func() {
		if b.t.Failed() {
			tb.mu.Lock()
			b.t.Logf("console of the %s tab:\n  %s", name, strings.Join(tb.console, "\n  "))
			tb.mu.Unlock()
		}
		cancel()
	})
	if err := chromedp.Do(ctx); err != nil {
		b.t.Fatalf("open the %s tab: %v", name, err)
	}
	checkPageAPICalls(b.t, ctx)
	msgs := chromedp.Console(ctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			tb.mu.Lock()
			tb.console = append(tb.console, fmt.Sprintf("%s %s: %s", m.Time.Format("15:04:05.000"), m.Type, m))
			tb.mu.Unlock()
		}
	}()
	tb.viewport(w, h)
	tb.do(chromedp.Navigate(url))
	return tb
}

func (tb *tab) viewport(w, h int64) {
	tb.t.Helper()
	tb.do(chromedp.EmulateViewport(w, h))
}

// do runs actions with a 10 s bound.
func (tb *tab) do(actions ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 10*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		tb.t.Fatalf("%s tab: %v\n%s", tb.name, err, tb.describe())
	}
}

// eval evaluates a JavaScript expression in the page (promises awaited).
// DevTools evaluation is not subject to the page's CSP, unlike
// chromedp.Poll, whose new Function the CSP forbids.
func eval[T any](tb *tab, js string) T {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	if err != nil {
		tb.t.Fatalf("%s tab: eval %s: %v", tb.name, js, err)
	}
	return v
}

// waitFor polls a JavaScript condition until it holds; it fails the test
// after timeout, naming what it waited for.
func (tb *tab) waitFor(what, js string, timeout time.Duration) time.Duration {
	tb.t.Helper()
	start := time.Now()
	for {
		ctx, cancel := context.WithTimeout(tb.ctx, 5*time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("!!("+js+")"))
		cancel()
		if err == nil && ok {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			tb.t.Fatalf("%s tab: %s: not within %v (last error %v)\n%s", tb.name, what, timeout, err, tb.describe())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// blockOrigins makes the tab unable to reach the given origins, as if the
// network to them were down; no arguments lifts the block.
func (tb *tab) blockOrigins(origins ...string) {
	tb.t.Helper()
	var patterns []*network.BlockPattern
	for _, o := range origins {
		patterns = append(patterns, &network.BlockPattern{URLPattern: o + "/*", Block: true})
	}
	tb.do(chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		if _, err := cdp.Call(ctx, t, network.Enable, network.EnableParams{}); err != nil {
			return err
		}
		_, err := cdp.Call(ctx, t, network.SetBlockedURLs, network.SetBlockedURLsParams{URLPatterns: patterns})
		return err
	}))
}

// eval is eval[bool] for conditions.
func (tb *tab) eval(js string) bool {
	tb.t.Helper()
	return eval[bool](tb, "!!("+js+")")
}

// visibleJS is true when the element exists, no ancestor is hidden and it
// has a box.
func visibleJS(sel string) string {
	return fmt.Sprintf(`(() => { const e = document.querySelector(%q); return !!e && !e.closest('[hidden]') && e.getClientRects().length > 0; })()`, sel)
}

func (tb *tab) waitVisible(sel string) {
	tb.t.Helper()
	tb.waitFor(sel+" visible", visibleJS(sel), 30*time.Second) // liveness on a loaded machine
}

func (tb *tab) visible(sel string) bool {
	tb.t.Helper()
	return eval[bool](tb, visibleJS(sel))
}

func (tb *tab) click(sel string) {
	tb.t.Helper()
	// A live screen (the kitchen board on its stream) may render the
	// element anew between finding it and clicking it; DevTools then has
	// no box for the old node and nothing was clicked: find it again.
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(tb.ctx, 10*time.Second)
		err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel)))
		cancel()
		if err == nil {
			return
		}
		if !strings.Contains(err.Error(), "Could not find node with given id") || time.Now().After(deadline) {
			tb.t.Fatalf("%s tab: click %s: %v\n%s", tb.name, sel, err, tb.describe())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (tb *tab) typeInto(sel, text string) {
	tb.t.Helper()
	tb.do(chromedp.SendKeys(chromedp.CSS(sel), text))
}

func (tb *tab) text(sel string) string {
	tb.t.Helper()
	return eval[string](tb, fmt.Sprintf(`(document.querySelector(%q) || {}).textContent || ''`, sel))
}

// describe is what the page shows, for failure messages.
func (tb *tab) describe() string {
	ctx, cancel := context.WithTimeout(tb.ctx, 3*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + "\n" + document.body.innerText.slice(0, 1500)`))
	if err != nil {
		return "(page unreadable: " + err.Error() + ")"
	}
	return "page " + s
}

// login logs in on the kitchen or staff login form.
// editMenuItem opens the staff menu's item id in the form (the menu tab
// shown) and waits until the form holds it.
func (tb *tab) editMenuItem(id string) {
	tb.t.Helper()
	row := `#menu-list tr[data-menu-id="` + id + `"]`
	tb.waitVisible(row)
	tb.click(row + ` [data-action="edit"]`)
	tb.waitFor(id+" in the form", `document.querySelector('#menu-form').dataset.menuId === `+jsString(id), 5*time.Second)
}

func (tb *tab) login() {
	tb.t.Helper()
	tb.loginAs(staffPassword)
}

// loginAs logs in on the kitchen or staff login form with password.
func (tb *tab) loginAs(password string) {
	tb.t.Helper()
	tb.waitVisible("#login-form")
	tb.typeInto("#login-password", password)
	tb.click("#login-submit")
	// A minute: the namespace suite's boxes answer slower than loopback.
	tb.waitFor("the login form gone", `document.querySelector('#login').hidden`, 60*time.Second)
}

// ---------------------------------------------------------------- screenshots

// screenshotDir is the repository's screenshots/ folder (.gitignore keeps
// it out of git), or MO_SCREENSHOTS.
func screenshotDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("MO_SCREENSHOTS"); d != "" {
		return d
	}
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(d, "screenshots")
		}
		if filepath.Dir(d) == d {
			return filepath.Join(dir, "screenshots")
		}
	}
}

// screenshot checks the layout (checkLayout), saves what the tab's
// viewport shows as <dir>/<name>.png and returns the path.
func (tb *tab) screenshot(name string) string {
	tb.t.Helper()
	tb.checkLayout(name)
	dir := screenshotDir(tb.t)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(tb.ctx, 10*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		tb.t.Fatalf("%s tab: screenshot %s: %v", tb.name, name, err)
	}
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		tb.t.Fatal(err)
	}
	return path
}

func scrollTop() chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`)
}

// barsJS defines barsBottom(): the bottom of the sticky bars at the top of
// the page (the top bar, and the staff tabs where they stick).
const barsJS = `window.barsBottom = () => {
	let b = 0;
	for (const el of document.querySelectorAll('.topbar, .nav-tabs')) {
		if (el.closest('[hidden]') || getComputedStyle(el).position !== 'sticky') continue;
		b = Math.max(b, el.getBoundingClientRect().bottom);
	}
	return b;
};`

// scrollBelowBars scrolls the page so that the element's top is just
// below the sticky bars.
func (tb *tab) scrollBelowBars(sel string) {
	tb.t.Helper()
	eval[bool](tb, barsJS+fmt.Sprintf(`window.scrollBy(0, document.querySelector(%q).getBoundingClientRect().top - barsBottom() - 8); true`, sel))
}

// checkLayout fails the test when the page is wider than the viewport (a
// phone would scroll it sideways), naming the culprits, when a status
// badge is broken over lines, or when a toast covers a warning banner or
// a button of the top bar.
func (tb *tab) checkLayout(what string) {
	tb.t.Helper()
	out := eval[string](tb, `(() => {
		const w = document.documentElement.clientWidth;
		const problems = [];
		const name = (el) => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + (el.className ? '.' + String(el.className).split(' ').join('.') : '');
		if (document.documentElement.scrollWidth > w + 1) {
			const wide = [];
			for (const el of document.querySelectorAll('body *')) {
				if (el.closest('[hidden]') || el.closest('.table-wrap')) continue;
				const r = el.getBoundingClientRect();
				if (r.width > 0 && r.right > w + 1) wide.push(name(el) + ' right=' + Math.round(r.right));
			}
			problems.push('page ' + document.documentElement.scrollWidth + 'px wide in a ' + w + 'px viewport: ' + wide.slice(0, 6).join(', '));
		}
		for (const el of document.querySelectorAll('.status')) {
			if (el.closest('[hidden]') || el.getClientRects().length === 0) continue;
			const lh = parseFloat(getComputedStyle(el).fontSize) * 1.8;
			if (el.getBoundingClientRect().height > lh) problems.push('badge ' + JSON.stringify(el.textContent) + ' broken over lines (' + Math.round(el.getBoundingClientRect().height) + 'px high)');
		}
		const banner = [...document.querySelectorAll('.banner')].find((el) => !el.closest('[hidden]'));
		const toast = [...document.querySelectorAll('.toast')].find((el) => !el.closest('[hidden]'));
		if (banner && toast) {
			const a = banner.getBoundingClientRect(), b = toast.getBoundingClientRect();
			if (a.bottom > b.top && b.bottom > a.top && a.right > b.left && b.right > a.left) problems.push('the toast covers the banner ' + JSON.stringify(banner.textContent));
		}
		if (toast) {
			const b = toast.getBoundingClientRect();
			for (const el of document.querySelectorAll('.topbar button, .topbar select')) {
				if (el.closest('[hidden]') || el.getClientRects().length === 0) continue;
				const a = el.getBoundingClientRect();
				if (a.bottom > b.top && b.bottom > a.top && a.right > b.left && b.right > a.left) problems.push('the toast covers the top bar\'s ' + name(el));
			}
		}
		return problems.slice(0, 4).join('; ');
	})()`)
	if out != "" {
		tb.t.Errorf("%s: %s", what, out)
	}
}
