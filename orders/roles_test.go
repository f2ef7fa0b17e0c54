package orders_test

import (
	"bufio"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"masterorder/api/apitest"
	"masterorder/orders"
	"masterorder/orders/orderstest"
)

const kitchenPassword = "kitchen-pw-for-tests"

// kitchenLogin logs in with the kitchen password and checks the answer's
// role.
func kitchenLogin(t *testing.T, s *store, i int) string {
	t.Helper()
	r := s.do(i, "POST", "/api/staff/login", nil, map[string]string{"password": kitchenPassword})
	var out struct{ Token, Role string }
	r.json(t, &out)
	if r.Status != 200 || out.Role != "kitchen" || out.Token == "" {
		t.Fatalf("kitchen login: %d %s", r.Status, r.Body)
	}
	return out.Token
}

func withKitchenPassword(t *testing.T) func(int, *orders.FileConfig) {
	h := orderstest.PasswordHash(t, kitchenPassword)
	return func(_ int, c *orders.FileConfig) { c.Staff.KitchenPasswordHash = h }
}

// A stolen kitchen tablet: its token is tried on every staff route the
// server has (read from the router, so a route added later is covered).
// Everything but the kitchen's own calls answers 403 FORBIDDEN_ROLE, and
// the calls it may make cannot be stretched into a manager's.
func TestKitchenTokenOnManagerEndpoints(t *testing.T) {
	s := startStore(t, 3, withKitchenPassword(t))
	s.seedMenu()
	sess := s.openSession("K1")
	g := s.guest(sess)
	if r := g.order(1, newKey(), cart(line("ramen", 1))); r.Status != 200 {
		t.Fatalf("order: %d %s", r.Status, r.Body)
	}
	// The manager login says manager.
	r := s.do(0, "POST", "/api/staff/login", nil, map[string]string{"password": staffPassword})
	var mgr struct{ Role string }
	r.json(t, &mgr)
	if mgr.Role != "manager" {
		t.Errorf("manager login role %q", mgr.Role)
	}
	kt := kitchenLogin(t, s, 1)
	kitchen := func(i int, method, path string, body any) resp {
		return s.do(i, method, path, map[string]string{"Authorization": "Bearer " + kt}, body)
	}

	allowed := map[string]bool{
		"GET /api/kitchen/orders": true, "GET /api/kitchen/stream": true, "POST /api/kitchen/stream-ticket": true, "PATCH /api/staff/orders/:orderId": true,
		"GET /api/staff/menu": true, "GET /api/staff/stock": true, "PUT /api/staff/menu/:menuId": true,
		"PUT /api/staff/stock/:sku": true, "POST /api/staff/logout": true,
		"GET /api/staff/calls": true, "POST /api/staff/calls/:callId/done": true,
		"GET /api/staff/printers":                true, // read only, for the kitchen's printer-offline banner
		"POST /api/kitchen/orders/:orderId/bump": true, // a station's lines done
	}
	checked := 0
	for path, methods := range hostileRoutes(s) {
		if !strings.HasPrefix(path, "/api/staff/") && !strings.HasPrefix(path, "/api/kitchen/") || path == "/api/staff/login" {
			continue
		}
		for _, m := range methods {
			if allowed[m+" "+path] || strings.HasSuffix(path, "/*") {
				continue
			}
			r := kitchen(checked%3, m, hostileFill(path, "T1"), map[string]any{})
			if r.Status != http.StatusForbidden || r.reason(t) != "FORBIDDEN_ROLE" {
				t.Errorf("kitchen token on %s %s: %d %s", m, path, r.Status, r.Body)
			}
			checked++
		}
	}
	if checked < 12 {
		t.Errorf("only %d manager calls checked", checked)
	}

	// What the kitchen does all day works.
	if r := kitchen(2, "GET", "/api/kitchen/orders", nil); r.Status != 200 {
		t.Errorf("kitchen orders: %d %s", r.Status, r.Body)
	}
	hist := g.history(0, "")
	if len(hist) != 1 {
		t.Fatalf("history: %+v", hist)
	}
	if r := kitchen(0, "PATCH", "/api/staff/orders/"+strconv.FormatInt(hist[0].OrderID, 10), map[string]string{"status": "COOKING"}); r.Status != 200 {
		t.Errorf("kitchen bump: %d %s", r.Status, r.Body)
	}
	var menu struct{ Items []map[string]any }
	kitchen(0, "GET", "/api/staff/menu", nil).json(t, &menu)
	var tea map[string]any
	for _, it := range menu.Items {
		if it["menuId"] == "tea" {
			tea = it
		}
	}
	if tea == nil {
		t.Fatalf("menu: %+v", menu)
	}
	body := map[string]any{"name": tea["name"], "nameEn": tea["nameEn"], "category": tea["category"], "price": tea["price"],
		"sortOrder": tea["sortOrder"], "toppings": tea["toppings"], "available": false}
	if r := kitchen(1, "PUT", "/api/staff/menu/tea", body); r.Status != 200 {
		t.Errorf("kitchen sold-out toggle: %d %s", r.Status, r.Body)
	}
	body["price"], body["available"] = 1, true
	if r := kitchen(1, "PUT", "/api/staff/menu/tea", body); r.Status != 403 || r.reason(t) != "FORBIDDEN_ROLE" {
		t.Errorf("kitchen price change: %d %s", r.Status, r.Body)
	}
	if r := kitchen(1, "PUT", "/api/staff/menu/newthing", body); r.Status != 403 {
		t.Errorf("kitchen new menu item: %d %s", r.Status, r.Body)
	}
	if r := kitchen(2, "PUT", "/api/staff/stock/gyoza", map[string]any{"quantity": 0}); r.Status != 200 {
		t.Errorf("kitchen sold out by stock: %d %s", r.Status, r.Body)
	}
	if r := kitchen(2, "PUT", "/api/staff/stock/gyoza", map[string]any{"quantity": 500}); r.Status != 403 {
		t.Errorf("kitchen stock count: %d %s", r.Status, r.Body)
	}
	if q := s.stock(0, "gyoza"); q == nil || *q != 0 {
		t.Errorf("gyoza stock %v after the kitchen's refused count", q)
	}

	// ?token= opens the kitchen stream, and nothing else.
	req, _ := http.NewRequest("GET", s.url(0)+"/api/kitchen/stream?token="+kt, nil)
	res, err := apitest.Client(t, &http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(res.Body).ReadString('\n')
	res.Body.Close()
	if res.StatusCode != 200 || line == "" {
		t.Errorf("stream with ?token=: %d %q", res.StatusCode, line)
	}
	for _, p := range []string{"/api/kitchen/orders", "/api/staff/menu", "/api/staff/backup", "/api/staff/audit"} {
		for _, tok := range []string{kt, s.token} {
			if r := s.do(0, "GET", p+"?token="+tok, nil, nil); r.Status != 401 {
				t.Errorf("?token= on %s: %d %s", p, r.Status, r.Body)
			}
		}
	}
}
