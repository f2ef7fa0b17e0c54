package orders_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"masterorder/orders"
)

// The order gate answers a guest order's session and catalog version
// from the admission state (admitsession.go, issue 41): the same scenario
// against a node reading the memory and one reading the files answers the
// same, case by case — active, checkout in progress, closed and unknown
// sessions, right and wrong PINs and credentials, a PIN reset, a menu
// write.
func TestTheOrderGateAnswersTheSameFromMemoryAndFromTheFiles(t *testing.T) {
	s := startStore(t, 1, nil)
	s.mustStaff(0, "PUT", "/api/staff/menu/tea", map[string]any{"name": "烏龍茶", "category": "drinks", "price": 300})
	svc := s.svcs[0]
	// An order builds the memory.
	if r := s.guest(s.openSession("W")).order(0, newKey(), cart(line("tea", 1))); r.Status != 200 {
		t.Fatalf("first order: %d %s", r.Status, r.Body)
	}
	scenario := func(memory bool) []string {
		if !memory {
			defer svc.WithoutAdmissionMemory()()
		}
		var out []string
		n := 0
		mode := map[bool]string{true: "M", false: "F"}[memory]
		open := func() session {
			n++
			return s.openSession(fmt.Sprintf("G%s%d", mode, n))
		}
		base := func(sess session) string { return "/api/guest/sessions/" + sess.ID }
		// credential is what a device that entered the right PIN holds.
		credential := func(sess session) string {
			r := s.do(0, "GET", base(sess), map[string]string{"X-Session-PIN": sess.PIN}, nil)
			c := r.Header.Get("X-Session-Credential")
			if r.Status != 200 || c == "" {
				t.Fatalf("credential: %d %s", r.Status, r.Body)
			}
			return c
		}
		order := func(name string, sess session, pin, cred string, body any) {
			t.Helper()
			hdr := map[string]string{"Idempotency-Key": newKey(), "X-MasterOrder-Client-Id": newClient()}
			if pin != "" {
				hdr["X-Session-PIN"] = pin
			}
			if cred != "" {
				hdr["X-Session-Credential"] = cred
			}
			r := s.do(0, "POST", base(sess)+"/orders", hdr, body)
			if r.Status >= 500 {
				t.Fatalf("%s: %d %s", name, r.Status, r.Body)
			}
			out = append(out, fmt.Sprintf("%s: %d %s credential=%v", name, r.Status, r.reason(t), r.Header.Get("X-Session-Credential") != ""))
		}
		wrong := func(pin string) string { return fmt.Sprintf("%04d", (atoi(pin)+1)%10000) }
		tea := cart(line("tea", 1))

		active := open()
		if memory && !svc.OrderGateFromMemory(active.ID) {
			t.Fatal("an active session is not answered from memory: the test compares the files with themselves")
		}
		order("active, right PIN", active, active.PIN, "", tea)
		order("active, wrong PIN", open(), wrong(active.PIN), "", tea)
		a := open()
		order("active, credential", a, "", credential(a), tea)
		a = open()
		order("active, forged credential, no PIN", a, "", strings.Repeat("x", 43), tea)
		a = open()
		order("active, forged credential, right PIN", a, a.PIN, strings.Repeat("x", 43), tea)
		order("active, unknown item", open(), "", "", cart(line("nope", 1)))

		busy := open()
		s.mustStaff(0, "POST", "/api/staff/sessions/"+busy.ID+"/checkout/begin", nil)
		order("checkout in progress, right PIN", busy, busy.PIN, "", tea)
		busy = open()
		s.mustStaff(0, "POST", "/api/staff/sessions/"+busy.ID+"/checkout/begin", nil)
		order("checkout in progress, wrong PIN", busy, wrong(busy.PIN), "", tea)

		closed := open()
		cred := credential(closed)
		s.mustStaff(0, "POST", "/api/staff/sessions/"+closed.ID+"/checkout", map[string]string{"payment": "cash"})
		if svc.OrderGateFromMemory(closed.ID) {
			t.Fatal("a closed session is answered from memory")
		}
		order("closed, right PIN", closed, closed.PIN, "", tea)
		order("closed, credential", closed, "", cred, tea)
		closed = open()
		s.mustStaff(0, "POST", "/api/staff/sessions/"+closed.ID+"/checkout", map[string]string{"payment": "cash"})
		order("closed, wrong PIN", closed, wrong(closed.PIN), "", tea)

		unknown := session{ID: "Unknown" + mode + "000000000000000", PIN: "1234"}
		order("unknown", unknown, unknown.PIN, "", tea)

		// Staff's new PIN: the old one and its credentials stop working.
		for i := 0; i < 2; i++ {
			reset := open()
			oldCred := credential(reset)
			var fresh struct{ PIN string }
			s.mustStaff(0, "POST", "/api/staff/sessions/"+reset.ID+"/pin", nil).json(t, &fresh)
			if fresh.PIN == reset.PIN {
				continue // the same four digits again: nothing to tell apart
			}
			order("after a PIN reset, the old PIN", reset, reset.PIN, "", tea)
			order("after a PIN reset, the old credential", reset, "", oldCred, tea)
			order("after a PIN reset, the new PIN", reset, fresh.PIN, "", tea)
			break
		}

		// A menu write moves the catalog version.
		item := "new" + strings.ToLower(mode)
		order("before the menu write", open(), "", "", cart(line(item, 1)))
		s.mustStaff(0, "PUT", "/api/staff/menu/"+item, map[string]any{"name": "新", "category": "sides", "price": 100})
		a = open()
		order("after the menu write", a, a.PIN, "", cart(line(item, 1)))
		return out
	}
	fromMemory, fromFiles := scenario(true), scenario(false)
	for i := range fromMemory {
		if fromMemory[i] != fromFiles[i] {
			t.Errorf("from memory %q, from the files %q", fromMemory[i], fromFiles[i])
		}
	}
	t.Logf("%s", strings.Join(fromMemory, "\n"))
	for _, want := range []string{"active, right PIN: 200  credential=true", "active, wrong PIN: 401 INVALID_PIN", "active, credential: 200",
		"checkout in progress, right PIN: 409 SESSION_BUSY", "closed, right PIN: 410 SESSION_CLOSED", "closed, credential: 410 SESSION_CLOSED",
		"unknown: 404 SESSION_NOT_FOUND", "after a PIN reset, the old PIN: 401", "after a PIN reset, the old credential: 401", "after a PIN reset, the new PIN: 200",
		"active, unknown item: 400 INVALID_ORDER", "before the menu write: 400 INVALID_ORDER", "after the menu write: 200"} {
		if !strings.Contains(strings.Join(fromMemory, "\n"), want) {
			t.Errorf("no answer %q: the scenario does not meet the case", want)
		}
	}
}

// Guests order while staff open, reset, close sessions and write the menu
// through the same node: the order gate reads the memory beside the apply
// path (the race detector judges the locking), and every answer is one a
// guest can get, never a 5xx.
func TestTheOrderGateReadsTheMemoryBesideTheApplyPath(t *testing.T) {
	s := startStore(t, 1, nil)
	s.mustStaff(0, "PUT", "/api/staff/menu/tea", map[string]any{"name": "烏龍茶", "category": "drinks", "price": 300})
	const guests = 4
	sessions := make([]session, 8)
	for i := range sessions {
		sessions[i] = s.openSession(fmt.Sprintf("R%d", i))
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	bad := make(chan string, guests)
	for g := range guests {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				sess := sessions[(g+i*guests)%len(sessions)]
				r := s.do(0, "POST", "/api/guest/sessions/"+sess.ID+"/orders", map[string]string{"Idempotency-Key": newKey(),
					"X-MasterOrder-Client-Id": newClient(), "X-Session-PIN": sess.PIN}, cart(line("tea", 1)))
				switch r.Status {
				case http.StatusOK, http.StatusUnauthorized, http.StatusConflict, http.StatusGone, http.StatusTooManyRequests:
				default:
					select {
					case bad <- fmt.Sprintf("%d %s", r.Status, r.Body):
					default:
					}
					return
				}
			}
		}()
	}
	for i := range 12 {
		switch i % 3 {
		case 0:
			s.mustStaff(0, "POST", "/api/staff/sessions/"+sessions[i%len(sessions)].ID+"/pin", nil)
		case 1:
			s.mustStaff(0, "PUT", "/api/staff/menu/tea", map[string]any{"name": "烏龍茶", "category": "drinks", "price": 300 + i})
		case 2:
			s.mustStaff(0, "POST", "/api/staff/sessions/"+sessions[i%len(sessions)].ID+"/checkout", map[string]string{"payment": "cash"})
			s.openSession(fmt.Sprintf("N%d", i))
		}
	}
	close(stop)
	wg.Wait()
	close(bad)
	for b := range bad {
		t.Error("a guest order answered", b)
	}
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}

// The receiving box's look at the gate's windows before proposing (a key
// replayed, the phone's cooldown, checkout's session lock, the session's
// burst window) answers from the admission state (gateLook) what it
// answers from one read of the KV, case by case, and a refusal there
// never reaches Apply.
func TestTheGateWindowsAnswerTheSameFromMemoryAndFromTheKV(t *testing.T) {
	s := startStore(t, 3, func(_ int, c *orders.FileConfig) {
		c.Admission.Cooldown.Duration = time.Minute
		c.Admission.SessionBurst.Duration = time.Minute
	})
	s.seedMenu()
	waitTopLevel(t, s)
	svc := s.svcs[0]
	scenario := func(memory bool) []string {
		if !memory {
			defer svc.WithoutAdmissionMemory()()
		}
		var out []string
		mode := map[bool]string{true: "M", false: "F"}[memory]
		n := 0
		open := func() session { n++; return s.openSession(fmt.Sprintf("W%s%d", mode, n)) }
		order := func(name string, g *guest, key string, body any) {
			t.Helper()
			r := g.order(0, key, body)
			if r.Status >= 500 {
				t.Fatalf("%s: %d %s", name, r.Status, r.Body)
			}
			out = append(out, fmt.Sprintf("%s: %d %s replay=%v", name, r.Status, r.reason(t), strings.Contains(string(r.Body), `"idempotentReplay":true`)))
		}
		g := s.guest(open())
		key := newKey()
		order("first order", g, key, cart(line("tea", 1)))
		order("the same key again", g, key, cart(line("tea", 1)))
		order("the same key, another cart", g, key, cart(line("tea", 2)))
		order("the same session, another phone", s.guest(g.sess), newKey(), cart(line("gyoza", 1)))
		other := &guest{s: s, sess: open(), client: g.client}
		order("the same phone, another session", other, newKey(), cart(line("tea", 1)))
		busy := open()
		s.mustStaff(0, "POST", "/api/staff/sessions/"+busy.ID+"/checkout/begin", nil)
		order("checkout in progress", s.guest(busy), newKey(), cart(line("tea", 1)))
		order("another session, another phone", s.guest(open()), newKey(), cart(line("tea", 1)))
		return out
	}
	fromMemory := scenario(true)
	if a := auditReasons(t, s); a["COOLDOWN_ACTIVE"] || a["SESSION_ORDER_IN_PROGRESS"] {
		t.Fatalf("a window was judged by Apply (audit %v), not before proposing", a)
	}
	fromKV := scenario(false)
	for i := range fromMemory {
		if fromMemory[i] != fromKV[i] {
			t.Errorf("from memory %q, from the KV %q", fromMemory[i], fromKV[i])
		}
	}
	t.Logf("%s", strings.Join(fromMemory, "\n"))
	for _, want := range []string{"first order: 200  replay=false", "the same key again: 200  replay=true", "the same key, another cart: 422 IDEMPOTENCY_KEY_REUSED",
		"the same session, another phone: 409 SESSION_ORDER_IN_PROGRESS", "the same phone, another session: 429 COOLDOWN_ACTIVE",
		"checkout in progress: 409 SESSION_BUSY", "another session, another phone: 200"} {
		if !strings.Contains(strings.Join(fromMemory, "\n"), want) {
			t.Errorf("no answer %q: the scenario does not meet the case", want)
		}
	}
}
