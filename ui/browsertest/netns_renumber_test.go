//go:build netns

package browsertest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"masterorder/node/lanname"
	"masterorder/orders/orderstest"
	"masterorder/orders/staffauth"
	"masterorder/setup"
)

// The new router (issue 37): every box gets a new address while the store
// takes orders, then one box gets another while it is switched off.

// newLease gives box b address ip as a DHCP client does with a new lease:
// the old address goes (with the routes through it), the new one comes,
// and the default route is set again. The box's process is not touched.
func (l *lan) newLease(b *netBox, ip string) {
	l.t.Helper()
	l.ipIn(b.ns, "addr", "flush", "dev", "eth0")
	l.ipIn(b.ns, "addr", "add", ip+"/24", "dev", "eth0")
	l.ipIn(b.ns, "route", "replace", "default", "dev", "eth0")
}

// hostLeg adds an address on the host's leg of the LAN (the new router's
// subnet), so the test's clients reach the boxes there too.
func (l *lan) hostLeg(cidr string) {
	l.t.Helper()
	l.ip("addr", "add", cidr, "dev", l.prefix+"h")
}

// formByWizard forms a store of boxes through the setup wizard of the
// first one, as the setup page does (its HTTP API: the page's calls), and
// waits for the done state.
func formByWizard(t *testing.T, boxes []*netBox) {
	t.Helper()
	plain := &http.Client{Timeout: 5 * time.Second}
	var found struct{ Boxes []setup.BoxView }
	if !waitTrue(60*time.Second, func() bool {
		return getJSON(plain, boxes[0].url()+"/setup/api/boxes", &found) == 200 && len(found.Boxes) >= len(boxes)
	}) {
		t.Fatalf("the wizard found %d boxes, want %d", len(found.Boxes), len(boxes))
	}
	var ids []string
	for _, f := range found.Boxes {
		ids = append(ids, f.ID)
	}
	req := setup.CreateRequest{Boxes: ids, ShopName: "らーめん田中", ManagerPasswordHash: bcryptOf(t, netnsManagerPW),
		KitchenPasswordHash: bcryptOf(t, netnsKitchenPW), TaxRatePercent: 10}
	if r := orderstest.Do(t, plain, "POST", boxes[0].url()+"/setup/api/create", nil, req); r.Status != 202 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	var p setup.Progress
	if !waitTrue(3*time.Minute, func() bool {
		return getJSON(plain, boxes[0].url()+"/setup/api/progress", &p) == 200 && (p.State == "done" || p.State == "failed")
	}) || p.State != "done" {
		t.Fatalf("the wizard did not finish: %+v", p)
	}
}

// stormer is guests ordering through every box without pause: each guest
// sends one order at a time with its own Idempotency-Key and resends the
// same key (as order-sdk.js does) until the store acknowledges it.
type stormer struct {
	t     *testing.T
	hc    *http.Client
	mu    sync.Mutex
	addrs []string         // where the guests' phones reach the boxes now
	acked map[ackID]string // order (session, id) → the key that made it
	keys  atomic.Int64
	dup   atomic.Int64 // one key acknowledged with two order ids
	// lastAck is when the store last acknowledged an order (unix nanos).
	lastAck atomic.Int64
}

// ackID is one order: order ids count within a session.
type ackID struct {
	session string
	order   int64
}

func (s *stormer) setAddrs(addrs []string) {
	s.mu.Lock()
	s.addrs = append([]string(nil), addrs...)
	s.mu.Unlock()
}

func (s *stormer) addr(i int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addrs[i%len(s.addrs)]
}

// guest orders for session sess until ctx ends; the last order in flight
// is resent until acknowledged (within a bound) even after ctx ends, so
// that every key the test made ends acknowledged or reported.
func (s *stormer) guest(ctx context.Context, g int, sess session, unacked *atomic.Int64) {
	client := newClientID()
	// A guest who taps "order again" confirms the repeat (allowRepeat):
	// the same cart is a new order, not the last one answered again.
	body := map[string]any{"items": []map[string]any{{"menuId": "gyoza", "quantity": 1, "toppings": []string{}}}, "allowRepeat": true}
	for try := 0; ctx.Err() == nil; try++ {
		key := uuidV4()
		s.keys.Add(1)
		hdr := map[string]string{"Idempotency-Key": key, "X-MasterOrder-Client-Id": client, "X-Session-PIN": sess.PIN}
		deadline := time.Now().Add(3 * time.Minute)
		var got int64
		for attempt := 0; time.Now().Before(deadline); attempt++ {
			base := "http://" + s.addr(g+attempt)
			r := orderstest.Do(s.t, s.hc, "POST", base+"/api/guest/sessions/"+sess.SessionID+"/orders", hdr, body)
			if r.Status == 200 {
				var out struct{ OrderID int64 }
				r.Decode(s.t, &out)
				got = out.OrderID
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if got == 0 {
			unacked.Add(1)
			return
		}
		s.mu.Lock()
		id := ackID{sess.SessionID, got}
		if k, ok := s.acked[id]; ok && k != key {
			s.dup.Add(1)
		}
		s.acked[id] = key
		s.mu.Unlock()
		s.lastAck.Store(time.Now().UnixNano())
	}
}

// TestNetnsNewRouter: a store formed by the wizard on a LAN of network
// namespaces takes a storm of guest orders; every box is given a new
// address on a new subnet at once, as after a new router (flush and add,
// no restart). The store takes orders again within a bounded time (the
// time is logged: RENUMBER-RECOVERY), no acknowledged order is lost and
// none is stored twice; a phone reaches the store by masterorder.local
// and a tablet logs in by the name it saved (https://masterorder.local,
// trusting only the cluster CA). Then one box is switched off, moved to
// another address and switched on: it rejoins with no human
// (RENUMBER-OFFLINE-REJOIN).
func TestNetnsNewRouter(t *testing.T) {
	l := newLAN(t)
	s := newNetStore(t, l)
	var boxes []*netBox
	for i, id := range []string{"a", "b", "c"} {
		boxes = append(boxes, s.add(id, 11+i))
	}
	for _, b := range boxes {
		s.startBlank(b)
	}
	plain := &http.Client{Timeout: 5 * time.Second}
	for _, b := range boxes {
		if !waitTrue(30*time.Second, func() bool { return getJSON(plain, b.url()+"/setup/", nil) == 200 }) {
			t.Fatalf("box %s shows no setup page", b.id)
		}
	}
	formByWizard(t, boxes)

	// The tablet saves the store's name, as the done page tells it to.
	caPEM := fetchCA(t, boxes[0].url())
	tc := nameTablet(t, caPEM, l, "tablet", 60)
	staffBase := "https://" + lanname.DefaultName
	var token string
	if !waitTrue(90*time.Second, func() bool {
		r := orderstest.Do(t, tc.hc, "POST", staffBase+"/api/staff/login", nil, map[string]string{"password": netnsManagerPW})
		if r.Status != 200 {
			return false
		}
		var out struct{ Token string }
		r.Decode(t, &out)
		token = out.Token
		return token != ""
	}) {
		t.Fatal("the tablet does not log in by the store's name")
	}
	auth := map[string]string{"Authorization": "Bearer " + token}
	retry := func(method, path string, body any) orderstest.Resp {
		var r orderstest.Resp
		waitTrue(60*time.Second, func() bool {
			r = orderstest.Do(t, tc.hc, method, staffBase+path, auth, body)
			return r.Status == 200
		})
		return r
	}
	if r := retry("PUT", "/api/staff/menu/gyoza", map[string]any{"name": "餃子", "nameEn": "Gyoza", "category": "sides", "price": 450, "available": true}); r.Status != 200 {
		t.Fatalf("menu: %d %s", r.Status, r.Body)
	}
	const tables = 6
	var sessions []session
	for i := 0; i < tables; i++ {
		r := retry("POST", "/api/staff/sessions", map[string]string{"tableId": fmt.Sprintf("T%d", i+1)})
		if r.Status != 200 {
			t.Fatalf("open table: %d %s", r.Status, r.Body)
		}
		var sess session
		r.Decode(t, &sess)
		sessions = append(sessions, sess)
	}

	// The storm, through every box's address.
	st := &stormer{t: t, hc: &http.Client{Timeout: 5 * time.Second}, acked: map[ackID]string{}}
	var addrs []string
	for _, b := range boxes {
		addrs = append(addrs, b.ip)
	}
	st.setAddrs(addrs)
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var unacked atomic.Int64
	for g := 0; g < tables*2; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st.guest(ctx, g, sessions[g%tables], &unacked)
		}()
	}
	defer stop()
	time.Sleep(5 * time.Second)
	before := st.keys.Load()
	if st.lastAck.Load() == 0 {
		t.Fatal("the storm placed no order before the new router")
	}

	// The new router: every box gets an address on 10.78.0.0/24 at once.
	l.hostLeg("10.78.0.254/24")
	renumbered := time.Now()
	var rw sync.WaitGroup
	for i, b := range boxes {
		rw.Add(1)
		go func() {
			defer rw.Done()
			l.newLease(b, fmt.Sprintf("10.78.0.%d", 21+i))
		}()
	}
	rw.Wait()
	addrs = addrs[:0]
	for i, b := range boxes {
		b.ip = fmt.Sprintf("10.78.0.%d", 21+i)
		addrs = append(addrs, b.ip)
	}
	// The guests' phones got new leases too and ask again where the store
	// is: the test hands them the new addresses.
	st.setAddrs(addrs)
	if !waitTrue(3*time.Minute, func() bool { return st.lastAck.Load() > renumbered.UnixNano() }) {
		t.Fatal("the store took no order within 3 minutes of the new router")
	}
	recovered := time.Unix(0, st.lastAck.Load()).Sub(renumbered)
	// Every box takes orders at its new address (the first ack may have
	// come through one box that had not lost its quorum's leader).
	extra := map[string]int{}
	for _, b := range boxes {
		key := uuidV4() // resent until acknowledged, as a phone does
		if !waitTrue(2*time.Minute, func() bool { return storeTakes(t, plain, b, sessions[0], key) }) {
			t.Fatalf("box %s takes no order at its new address %s", b.id, b.ip)
		}
		extra[sessions[0].SessionID]++
	}
	everyBox := time.Since(renumbered)
	time.Sleep(5 * time.Second) // the storm goes on at the new addresses
	stop()
	wg.Wait()
	t.Logf("RENUMBER-RECOVERY three boxes given new addresses (10.77.0.11-13 → 10.78.0.21-23, flush and add, no restart) under a storm of %d guests: first order acknowledged %.1f s later, every box takes orders at its new address after %.1f s; %d orders asked before, %d in all",
		tables*2, recovered.Seconds(), everyBox.Seconds(), before, st.keys.Load())
	if n := unacked.Load(); n > 0 {
		t.Fatalf("%d orders were never acknowledged within 3 minutes of resending", n)
	}
	if n := st.dup.Load(); n > 0 {
		t.Fatalf("%d idempotency keys got two order ids", n)
	}
	checkStored(t, s, boxes, sessions, st, extra)

	// The phone finds the store by its name after the new router, and the
	// tablet logs in again by the name it saved.
	phoneNS := l.join("phone", 50)
	l.ipIn(phoneNS, "addr", "add", "10.78.0.50/24", "dev", "eth0")
	p := newPhone(phoneNS, (&mdnsResolver{ns: phoneNS}).resolve)
	if _, err := phoneGuestOrder(t, p, "http://"+lanname.DefaultName, sessions[0], 60*time.Second); err != nil {
		t.Fatalf("a phone orders through masterorder.local after the new router: %v", err)
	}
	if !waitTrue(60*time.Second, func() bool {
		r := orderstest.Do(t, tc.hc, "POST", staffBase+"/api/staff/login", nil, map[string]string{"password": netnsManagerPW})
		return r.Status == 200
	}) {
		t.Fatal("the tablet does not log in by the saved name after the new router")
	}
	tabletReachesEveryBox(t, tc, staffBase, boxes)

	// A box moved while switched off: c is stopped, gets another address,
	// and starts again as its unit would.
	c := boxes[2]
	s.kill(c)
	moved := time.Now()
	l.newLease(c, "10.78.0.33")
	c.ip = "10.78.0.33"
	s.startBlank(c)
	var last int64
	key := uuidV4()
	if !waitTrue(2*time.Minute, func() bool { return storeTakes(t, plain, c, sessions[1], key) }) {
		t.Fatalf("box c takes no order after it was moved to %s while off", c.ip)
	}
	// Its own replica holds an order placed through another box.
	id, err := phoneGuestOrder(t, p, "http://"+boxes[0].ip, sessions[1], 60*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	last = id
	s.waitEveryBoxHolds(boxes, sessions[1], []int64{last}, 60*time.Second)
	t.Logf("RENUMBER-OFFLINE-REJOIN box c switched off, moved to %s, switched on: takes orders and holds the others' after %.1f s",
		c.ip, time.Since(moved).Seconds())
	tabletReachesEveryBox(t, tc, staffBase, []*netBox{c})
	// The store (the box answering its name) sees it working.
	var stat struct {
		Nodes []struct {
			ID        string `json:"id"`
			Reachable bool   `json:"reachable"`
		} `json:"nodes"`
	}
	if !waitTrue(30*time.Second, func() bool {
		r := orderstest.Do(t, tc.hc, "GET", staffBase+"/api/cluster/status", auth, nil)
		if r.Status != 200 {
			return false
		}
		r.Decode(t, &stat)
		n := 0
		for _, x := range stat.Nodes {
			if x.Reachable {
				n++
			}
		}
		return n == 3
	}) {
		t.Fatalf("the store does not see three working boxes: %+v", stat)
	}
}

// tabletReachesEveryBox: the tablet reaches each box over HTTPS at the
// address the store's status gives for it, as the console's failover
// does (assets/cluster.js: httpsAddr), checking the certificate against
// that address: each box's certificate names the address it has now
// (node/certrenew follows a new lease).
func tabletReachesEveryBox(t *testing.T, tc *tablet, staffBase string, boxes []*netBox) {
	t.Helper()
	for _, b := range boxes {
		nodeID := nodeIDOf(t, b)
		var addr, why string
		if !waitTrue(2*time.Minute, func() bool {
			var st struct {
				Nodes []struct {
					ID        string `json:"id"`
					HTTPSAddr string `json:"httpsAddr"`
				} `json:"nodes"`
			}
			r := orderstest.Do(t, tc.hc, "GET", staffBase+"/api/cluster/status", nil, nil)
			if r.Status != 200 {
				why = fmt.Sprintf("status by the name: %d %s", r.Status, r.Body)
				return false
			}
			r.Decode(t, &st)
			for _, n := range st.Nodes {
				if n.ID == nodeID {
					addr = n.HTTPSAddr
				}
			}
			if host, _, err := net.SplitHostPort(addr); err != nil || host != b.ip {
				why = "the status gives " + addr
				return false
			}
			h := orderstest.Do(t, tc.hc, "GET", "https://"+addr+"/healthz", nil, nil)
			why = fmt.Sprintf("%d %s", h.Status, h.Body)
			return h.Status == 200
		}) {
			t.Fatalf("the tablet cannot reach box %s (%s) at its address %s over HTTPS: %s", b.id, nodeID, b.ip, why)
		}
	}
	t.Logf("the tablet reaches %d boxes over HTTPS at their addresses now", len(boxes))
}

// storeTakes places one order through box b's address (with key: the
// same order however often it is sent).
func storeTakes(t *testing.T, hc *http.Client, b *netBox, sess session, key string) bool {
	hdr := map[string]string{"Idempotency-Key": key, "X-MasterOrder-Client-Id": newClientID(), "X-Session-PIN": sess.PIN}
	body := map[string]any{"items": []map[string]any{{"menuId": "gyoza", "quantity": 1, "toppings": []string{}}}, "allowRepeat": true}
	r := orderstest.Do(t, hc, "POST", b.url()+"/api/guest/sessions/"+sess.SessionID+"/orders", hdr, body)
	return r.Status == 200
}

// checkStored holds every box's replica to the storm: every acknowledged
// order is there, and each of the storm's keys made one order (the
// storm's sessions hold exactly its acknowledged orders, plus the ones
// storeTakes placed, counted in extra per session).
func checkStored(t *testing.T, s *netStore, boxes []*netBox, sessions []session, st *stormer, extra map[string]int) {
	t.Helper()
	st.mu.Lock()
	want := map[string]map[int64]bool{}
	for id := range st.acked {
		if want[id.session] == nil {
			want[id.session] = map[int64]bool{}
		}
		want[id.session][id.order] = true
	}
	total := len(st.acked)
	st.mu.Unlock()
	for _, b := range boxes {
		var missing, surplus int
		if !waitTrue(60*time.Second, func() bool {
			missing, surplus = 0, 0
			for _, sess := range sessions {
				held := s.orderIDs(b, sess)
				for id := range want[sess.SessionID] {
					if !held[id] {
						missing++
					}
				}
				if n := len(held) - len(want[sess.SessionID]) - extra[sess.SessionID]; n > 0 {
					surplus += n
				}
			}
			return missing == 0 && surplus == 0
		}) {
			t.Fatalf("box %s: %d acknowledged orders missing, %d orders stored that no key accounts for (duplicates)", b.id, missing, surplus)
		}
	}
	t.Logf("storm: %d orders acknowledged, each stored once on every box: 0 lost, 0 duplicated", total)
}

// fetchCA is the cluster CA a box serves at /ca.crt, as PEM.
func fetchCA(t *testing.T, base string) []byte {
	t.Helper()
	res, err := http.Get(base + "/ca.crt")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	der, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		t.Fatalf("/ca.crt: %d", res.StatusCode)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// tablet is a staff tablet in its own namespace that trusts only the
// cluster CA and resolves .local names by mDNS, checking the server's
// certificate against the name it dialled.
type tablet struct {
	hc *http.Client
}

func nameTablet(t *testing.T, caPEM []byte, l *lan, name string, host int) *tablet {
	t.Helper()
	ns := l.join(name, host)
	// The tablet is on the new router's subnet too once there is one.
	l.ipIn(ns, "addr", "add", "10.78.0."+fmt.Sprint(host)+"/24", "dev", "eth0")
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("no CA")
	}
	res := &mdnsResolver{ns: ns}
	tr := &http.Transport{
		DisableKeepAlives: true,
		TLSClientConfig:   &tls.Config{RootCAs: pool},
		DialContext:       dialInNS(ns, res.resolve),
	}
	return &tablet{hc: &http.Client{Transport: tr, Timeout: 10 * time.Second}}
}

// bcryptOf is what the setup page sends for a password.
func bcryptOf(t *testing.T, pw string) string {
	t.Helper()
	h, err := staffauth.HashPassword(pw)
	if err != nil {
		t.Fatal(err)
	}
	return h
}
