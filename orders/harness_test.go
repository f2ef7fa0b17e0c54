package orders_test

import (
	"crypto/rand"
	"fmt"
	"net/http"
	"testing"
	"time"

	"masterorder/node"
	"masterorder/node/nodetest"
	"masterorder/orders"
	"masterorder/orders/orderstest"

	"github.com/google/uuid"
)

const staffPassword = "pw-for-tests"

func passwordHash(t testing.TB) string { return orderstest.PasswordHash(t, staffPassword) }

// store is a running 3-node cluster with the domain attached.
type store struct {
	t      testing.TB
	c      *nodetest.Cluster
	domain []orders.Config // node i's domain settings (c.Configs[i] its node's)
	svcs   []*orders.Service
	token  string
	http   *http.Client
}

func startStore(t testing.TB, n int, mutate func(i int, c *orders.FileConfig), tune ...func(o *node.Options)) *store {
	t.Helper()
	return startStoreWith(t, n, mutate, func(int) node.Options {
		o := orders.NodeOptions()
		for _, f := range tune {
			f(&o)
		}
		return o
	})
}

// patient gives a store Raft timeouts that outlast a starved CPU
// (nodetest.PatientRaft), for tests whose verdict is "never a 5xx": an
// election that their own load or a busy machine causes answers 503
// NO_QUORUM, which is not theirs to judge.
func patient(i int, c *orders.FileConfig) { nodetest.PatientRaft(i, &c.NodeConfig) }

// startStoreWith starts the store with each node's options chosen by the
// test (extra test-only commands, say).
func startStoreWith(t testing.TB, n int, mutate func(i int, c *orders.FileConfig), options func(i int) node.Options) *store {
	t.Helper()
	st := orderstest.Start(t, n, mutate, options, orders.Options{StaffPasswordHash: passwordHash(t)})
	s := &store{t: t, c: st.Cluster, domain: st.Domain, svcs: st.Svcs, http: &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 256}}}
	s.token = s.login(0)
	return s
}

// running returns node i if it runs, else the next one that does.
func (s *store) running(i int) int {
	for k := 0; k < len(s.c.Nodes); k++ {
		if j := (i + k) % len(s.c.Nodes); s.c.Nodes[j] != nil {
			return j
		}
	}
	return i
}

func (s *store) url(i int) string { return "http://" + s.c.Configs[i].HTTPAddr }

type resp struct{ orderstest.Resp }

func (r resp) json(t testing.TB, v any) { t.Helper(); r.Decode(t, v) }

func (r resp) reason(testing.TB) string { return r.Reason() }

func (s *store) do(i int, method, path string, hdr map[string]string, body any) resp {
	s.t.Helper()
	return resp{orderstest.Do(s.t, s.http, method, s.url(i)+path, hdr, body)}
}

func (s *store) login(i int) string {
	s.t.Helper()
	r := s.do(i, "POST", "/api/staff/login", nil, map[string]string{"password": staffPassword})
	if r.Status != 200 {
		s.t.Fatalf("login: %d %s", r.Status, r.Body)
	}
	var out struct{ Token string }
	r.json(s.t, &out)
	return out.Token
}

func (s *store) staff(i int, method, path string, body any) resp {
	s.t.Helper()
	return s.do(i, method, path, map[string]string{"Authorization": "Bearer " + s.token}, body)
}

func (s *store) mustStaff(i int, method, path string, body any) resp {
	s.t.Helper()
	r := s.staff(i, method, path, body)
	if r.Status != 200 {
		s.t.Fatalf("%s %s on node %d: %d %s", method, path, i, r.Status, r.Body)
	}
	return r
}

// seedMenu: ramen 900 (egg 120, nori 80), gyoza 450 with stock 10, tea 300.
func (s *store) seedMenu() {
	s.t.Helper()
	s.mustStaff(0, "PUT", "/api/staff/menu/ramen", map[string]any{"name": "醤油ラーメン", "nameEn": "Shoyu ramen", "category": "noodles", "price": 900,
		"toppings": []map[string]any{{"toppingId": "egg", "name": "味玉", "price": 120}, {"toppingId": "nori", "name": "海苔", "price": 80}}})
	s.mustStaff(1, "PUT", "/api/staff/menu/gyoza", map[string]any{"name": "餃子", "category": "sides", "price": 450})
	s.mustStaff(2, "PUT", "/api/staff/menu/tea", map[string]any{"name": "烏龍茶", "category": "drinks", "price": 300})
	s.mustStaff(0, "PUT", "/api/staff/stock/gyoza", map[string]any{"quantity": 10})
}

type session struct {
	ID, PIN, Table string
}

func (s *store) openSession(table string) session {
	s.t.Helper()
	r := s.mustStaff(s.running(1), "POST", "/api/staff/sessions", map[string]string{"tableId": table})
	var out struct {
		SessionID, PIN, TableID, GuestURL string
	}
	r.json(s.t, &out)
	if out.SessionID == "" || len(out.PIN) != 4 {
		s.t.Fatalf("open session: %s", r.Body)
	}
	return session{ID: out.SessionID, PIN: out.PIN, Table: table}
}

func newKey() string { return uuid.NewString() }

func newClient() string {
	b := make([]byte, 8)
	rand.Read(b)
	return fmt.Sprintf("guest-%x", b)
}

type guest struct {
	s      *store
	sess   session
	client string
}

func (s *store) guest(sess session) *guest { return &guest{s: s, sess: sess, client: newClient()} }

func (g *guest) order(node int, key string, body any) resp {
	g.s.t.Helper()
	return g.s.do(node, "POST", "/api/guest/sessions/"+g.sess.ID+"/orders", map[string]string{
		"Idempotency-Key": key, "X-MasterOrder-Client-Id": g.client, "X-Session-PIN": g.sess.PIN}, body)
}

func (g *guest) history(node int, query string) []orderView {
	g.s.t.Helper()
	r := g.s.do(node, "GET", "/api/guest/sessions/"+g.sess.ID+"/orders"+query, map[string]string{"X-Session-PIN": g.sess.PIN}, nil)
	if r.Status != 200 {
		g.s.t.Fatalf("history on node %d: %d %s", node, r.Status, r.Body)
	}
	var out struct{ Orders []orderView }
	r.json(g.s.t, &out)
	return out.Orders
}

type orderView struct {
	OrderID    int64   `json:"orderId"`
	SessionID  string  `json:"sessionId"`
	TableID    string  `json:"tableId"`
	Status     string  `json:"status"`
	TotalPrice int64   `json:"totalPrice"`
	RequestID  *string `json:"requestId"`
	Source     string  `json:"source"`
	Items      []struct {
		MenuID    string `json:"menuId"`
		Quantity  int    `json:"quantity"`
		UnitPrice int64  `json:"unitPrice"`
		LineTotal int64  `json:"lineTotal"`
		Toppings  []struct {
			ToppingID string `json:"toppingId"`
		} `json:"toppings"`
	} `json:"items"`
}

type success struct {
	RequestID        string `json:"requestId"`
	Allowed          bool   `json:"allowed"`
	OrderID          int64  `json:"orderId"`
	Status           string `json:"status"`
	TotalPrice       int64  `json:"totalPrice"`
	IdempotentReplay bool   `json:"idempotentReplay"`
}

func cart(lines ...map[string]any) map[string]any { return map[string]any{"items": lines} }

func line(menu string, qty int, toppings ...string) map[string]any {
	if toppings == nil {
		toppings = []string{}
	}
	return map[string]any{"menuId": menu, "quantity": qty, "toppings": toppings}
}

func (s *store) stock(node int, sku string) *int64 {
	s.t.Helper()
	r := s.mustStaff(node, "GET", "/api/staff/stock", nil)
	var out struct {
		Stock []struct {
			SKU      string `json:"sku"`
			Quantity *int64 `json:"quantity"`
		} `json:"stock"`
	}
	r.json(s.t, &out)
	for _, l := range out.Stock {
		if l.SKU == sku {
			return l.Quantity
		}
	}
	s.t.Fatalf("sku %s not listed", sku)
	return nil
}
