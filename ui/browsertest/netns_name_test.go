//go:build netns

package browsertest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestNetnsGuestNameFailover: three boxes made by `masterorder init`, each
// in its own namespace, answer masterorder.local by mDNS; a phone in a
// fourth namespace resolves the name, loads the guest page and orders
// through it; the order is on every box. Then the box answering the name
// is SIGKILLed: the phone (a fresh lookup, and a resolver that cached the
// old answer for its TTL) loads the page and orders again through the
// name. The times are logged (NAME-FAILOVER lines).
func TestNetnsGuestNameFailover(t *testing.T) {
	l := newLAN(t)
	s := newNetStore(t, l)
	var spec []string
	var boxes []*netBox
	for i, id := range []string{"a", "b", "c"} {
		b := s.add(id, 11+i)
		boxes = append(boxes, b)
		spec = append(spec, fmt.Sprintf("%s=%s:80:9080", id, b.ip))
	}
	out := t.TempDir()
	if o, err := exec.Command(s.bin, "init", "--shop-id", "netns", "--nodes", strings.Join(spec, ","), "--out", out,
		"--staff-password", staffPassword, "--plain-http").CombinedOutput(); err != nil {
		t.Fatalf("masterorder init: %v\n%s", err, o)
	}
	for _, b := range boxes {
		cfg, err := os.ReadFile(filepath.Join(out, b.id+".toml"))
		if err != nil {
			t.Fatal(err)
		}
		cfg = append([]byte("mdns_name = \"masterorder.local\"\n"), cfg...)
		path := filepath.Join(out, b.id+".toml")
		if err := os.WriteFile(path, cfg, 0o600); err != nil {
			t.Fatal(err)
		}
		s.start(b, "run", "--config", path)
	}
	s.login(boxes[0], staffPassword)
	if r := s.retryStaff(boxes[0], "PUT", "/api/staff/menu/gyoza", map[string]any{"name": "餃子", "nameEn": "Gyoza", "category": "sides", "price": 450, "available": true}); r.status != 200 {
		t.Fatalf("menu: %d %s", r.status, r.body)
	}
	r := s.retryStaff(boxes[0], "POST", "/api/staff/sessions", map[string]string{"tableId": "T1"})
	if r.status != 200 {
		t.Fatalf("open table: %d %s", r.status, r.body)
	}
	var sess session
	r.decode(t, &sess)
	if !strings.HasPrefix(sess.GuestURL, "http://masterorder.local/guest/") {
		t.Fatalf("the QR code says %q, want the mDNS name", sess.GuestURL)
	}

	phoneNS := l.join("phone", 50)
	fresh := &mdnsResolver{ns: phoneNS}
	cached := &mdnsResolver{ns: phoneNS, cache: true}
	p := newPhone(phoneNS, fresh.resolve)
	pc := newPhone(phoneNS, cached.resolve)
	const base = "http://masterorder.local"
	if !waitTrue(30*time.Second, func() bool { return phoneLoads(t, p, sess.GuestURL) }) {
		t.Fatal("the guest page does not load through masterorder.local")
	}
	first, err := phoneGuestOrder(t, p, base, sess, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	s.waitEveryBoxHolds(boxes, sess, []int64{first}, 20*time.Second)
	answering := fresh.lastIP()
	// The cached phone resolves now, so it holds the answer the dead box
	// gave.
	if !phoneLoads(t, pc, sess.GuestURL) {
		t.Fatal("the caching phone cannot load the page")
	}
	var dead *netBox
	var live []*netBox
	for _, b := range boxes {
		if b.ip == answering {
			dead = b
		} else {
			live = append(live, b)
		}
	}
	if dead == nil {
		t.Fatalf("masterorder.local answered %s, which is no box", answering)
	}

	killed := time.Now()
	s.kill(dead)
	if !waitTrue(60*time.Second, func() bool { return phoneLoads(t, p, sess.GuestURL) }) {
		t.Fatalf("the guest page does not load through the name within 60 s after box %s died", dead.id)
	}
	loadFresh := time.Since(killed)
	if fresh.lastIP() == dead.ip {
		t.Fatalf("the dead box %s still answers the name", dead.id)
	}
	second, err := phoneGuestOrder(t, p, base, sess, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	orderFresh := time.Since(killed)
	if !waitTrue(60*time.Second, func() bool { return phoneLoads(t, pc, sess.GuestURL) }) {
		t.Fatal("the caching phone never loads the page again")
	}
	loadCached := time.Since(killed)
	s.waitEveryBoxHolds(live, sess, []int64{first, second}, 20*time.Second)
	t.Logf("NAME-FAILOVER box %s (answering masterorder.local) SIGKILLed; now answered by %s", dead.id, fresh.lastIP())
	t.Logf("NAME-FAILOVER guest page loads again through the name (fresh lookup): %.1f s", loadFresh.Seconds())
	t.Logf("NAME-FAILOVER guest order placed again through the name: %.1f s", orderFresh.Seconds())
	t.Logf("NAME-FAILOVER a phone that cached the old address (TTL %d s) loads the page again: %.1f s", 5, loadCached.Seconds())
}

// waitTrue polls cond every 200 ms until it holds or within runs out.
func waitTrue(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(200 * time.Millisecond)
	}
}
