//go:build netns

package browsertest

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"masterorder/node/lanname"
	"masterorder/orders/orderstest"
	"masterorder/setup/setuptest"
)

const (
	netnsManagerPW = "tonkotsu-2026-shop"
	netnsKitchenPW = "kitchen screen 77"
)

// startBlank starts `masterorder run` with no configuration in box b's
// namespace, as the package's unit does, with the box layout under the
// box's folder: setup mode on :80, mDNS on.
func (s *netStore) startBlank(b *netBox) {
	s.t.Helper()
	for _, d := range []string{"etc", "state", "boot", "sys"} {
		os.MkdirAll(filepath.Join(b.dir, d), 0o755)
	}
	s.start(b, "run", "--etc-dir", filepath.Join(b.dir, "etc"), "--state-dir", filepath.Join(b.dir, "state"),
		"--boot-dir", filepath.Join(b.dir, "boot"), "--sys-root", filepath.Join(b.dir, "sys"),
		"--listen", ":80", "--https-port", "443", "--raft-port", "7000", "--window-from-start")
}

// getJSON GETs url into v; the status, or -1 when nothing answered.
func getJSON(hc *http.Client, url string, v any) int {
	res, err := hc.Get(url)
	if err != nil {
		return -1
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if v != nil {
		json.Unmarshal(b, v)
	}
	return res.StatusCode
}

// managerLogin logs the manager in over HTTPS through box b, waiting up
// to a minute for the store to be ready, and returns the token.
func managerLogin(t *testing.T, tc *http.Client, b *netBox) string {
	t.Helper()
	var tok string
	if !waitTrue(60*time.Second, func() bool {
		r := orderstest.Do(t, tc, "POST", "https://"+b.ip+"/api/staff/login", nil, map[string]string{"password": netnsManagerPW})
		if r.Status != 200 {
			return false
		}
		var out struct{ Token string }
		r.Decode(t, &out)
		tok = out.Token
		return true
	}) {
		t.Fatalf("no manager login through box %s", b.id)
	}
	return tok
}

// TestNetnsStoreFromBlankBoxes is issue 29's store, end to end, on a LAN
// of network namespaces with real multicast:
//
//  1. three boxes with no configuration power on; the owner opens the
//     setup page of one of them in Chromium, sees the three boxes (found
//     by mDNS), fills in the form and creates the store;
//  2. a table is opened; a phone in a fourth namespace resolves
//     masterorder.local by mDNS and orders through it; every box holds
//     the order (the minutes from power-on are logged: STORE-FIRST-ORDER);
//  3. the box answering the name is SIGKILLed: the phone loads the guest
//     page and orders again through the name (STORE-NAME-FAILOVER);
//  4. that box stays dead; a fresh box in setup mode is powered on; in the
//     console's Boxes page the manager taps "Replace X with this box": the
//     new box holds every order, X is gone from the configuration, and
//     X's certificate is refused on the cluster port.
func TestNetnsStoreFromBlankBoxes(t *testing.T) {
	l := newLAN(t)
	s := newNetStore(t, l)
	var boxes []*netBox
	for i, id := range []string{"a", "b", "c"} {
		boxes = append(boxes, s.add(id, 11+i))
	}
	powerOn := time.Now()
	for _, b := range boxes {
		s.startBlank(b)
	}
	plain := &http.Client{Timeout: 5 * time.Second}
	for _, b := range boxes {
		if !waitTrue(30*time.Second, func() bool { return getJSON(plain, b.url()+"/setup/", nil) == 200 }) {
			t.Fatalf("box %s shows no setup page", b.id)
		}
	}

	// 1. The owner's phone finds a setup page by name (the QR code in the
	// owner's guide): masterorder-setup.local, answered by mDNS by the
	// boxes in setup mode. The browser gets the answer the phone's
	// namespace resolved.
	phoneNS := l.join("phone", 50)
	var setupIP net.IP
	if !waitTrue(30*time.Second, func() bool {
		ip, err := (&mdnsResolver{ns: phoneNS}).resolve(t.Context(), lanname.SetupName)
		setupIP = ip
		return err == nil
	}) {
		t.Fatal("nobody answers masterorder-setup.local")
	}
	br := startBrowserFor(t, 6*time.Minute, chromedp.Flag("ignore-certificate-errors", true),
		chromedp.Flag("host-resolver-rules", "MAP "+lanname.SetupName+" "+setupIP.String()))
	wz := br.open("wizard", "http://"+lanname.SetupName+"/setup/", phoneW, phoneH)
	runWizardInBrowser(t, wz, s, boxes)
	// Members never answer the setup name.
	if waitTrue(3*time.Second, func() bool {
		_, err := (&mdnsResolver{ns: phoneNS}).resolve(t.Context(), lanname.SetupName)
		return err == nil
	}) {
		t.Fatal("a member still answers masterorder-setup.local")
	}

	// 2. A table, a guest order through the name from a phone.
	tc := setuptest.TabletClient(t, boxes[0].url())
	https := func(b *netBox) string { return "https://" + b.ip }
	token := managerLogin(t, tc, boxes[0])
	staff := func(b *netBox, method, path string, body any) orderstest.Resp {
		deadline := time.Now().Add(30 * time.Second)
		for {
			r := orderstest.Do(t, tc, method, https(b)+path, map[string]string{"Authorization": "Bearer " + token}, body)
			if (r.Status != 503 && r.Status != -1) || time.Now().After(deadline) {
				return r
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	if r := staff(boxes[0], "PUT", "/api/staff/menu/gyoza", map[string]any{"name": "餃子", "nameEn": "Gyoza", "category": "sides", "price": 450, "available": true}); r.Status != 200 {
		t.Fatalf("menu: %d %s", r.Status, r.Body)
	}
	r := staff(boxes[0], "POST", "/api/staff/sessions", map[string]string{"tableId": "T1"})
	if r.Status != 200 {
		t.Fatalf("open table: %d %s", r.Status, r.Body)
	}
	var sess session
	r.Decode(t, &sess)
	if !strings.HasPrefix(sess.GuestURL, "http://masterorder.local/guest/") {
		t.Fatalf("the QR code says %q, want http://masterorder.local/…", sess.GuestURL)
	}
	resolver := &mdnsResolver{ns: phoneNS}
	p := newPhone(phoneNS, resolver.resolve)
	const base = "http://masterorder.local"
	if !waitTrue(60*time.Second, func() bool { return phoneLoads(t, p, sess.GuestURL) }) {
		t.Fatal("the guest page does not load through masterorder.local")
	}
	first, err := phoneGuestOrder(t, p, base, sess, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	firstAt := time.Since(powerOn)
	s.waitEveryBoxHolds(boxes, sess, []int64{first}, 30*time.Second)
	t.Logf("STORE-FIRST-ORDER three blank boxes powered on → store created in the wizard → first guest order through masterorder.local: %.1f minutes (%.0f s)", firstAt.Minutes(), firstAt.Seconds())

	// 3. The box answering the name dies.
	var dead *netBox
	var live []*netBox
	for _, b := range boxes {
		if b.ip == resolver.lastIP() {
			dead = b
		} else {
			live = append(live, b)
		}
	}
	if dead == nil {
		t.Fatalf("masterorder.local answered %s, no box", resolver.lastIP())
	}
	killed := time.Now()
	s.kill(dead)
	if !waitTrue(60*time.Second, func() bool { return phoneLoads(t, p, sess.GuestURL) }) {
		t.Fatalf("the guest page does not load through the name after box %s died", dead.id)
	}
	loadAgain := time.Since(killed)
	second, err := phoneGuestOrder(t, p, base, sess, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("STORE-NAME-FAILOVER box %s (answering the name) SIGKILLed: guest page loads through the name again after %.1f s, order placed after %.1f s",
		dead.id, loadAgain.Seconds(), time.Since(killed).Seconds())

	// 4. Replace the dead box from the console.
	deadID := nodeIDOf(t, dead)
	fresh := s.add("d", 14)
	s.startBlank(fresh)
	if !waitTrue(30*time.Second, func() bool { return getJSON(plain, fresh.url()+"/setup/", nil) == 200 }) {
		t.Fatal("the fresh box shows no setup page")
	}
	console := br.open("console", https(live[0])+"/staff/#cluster", tabletW, tabletH)
	console.loginAs(netnsManagerPW)
	console.waitFor("box "+deadID+" shown as not answering", fmt.Sprintf(`!!document.querySelector('#health-problems [data-problem="down"][data-box-id=%q]')`, deadID), 30*time.Second)
	console.waitFor("the fresh box listed with a replace button", fmt.Sprintf(`!!document.querySelector('#found-list [data-join-replace=%q]')`, deadID), 60*time.Second)
	console.screenshot("netns-console-replace-found-tablet-ja")
	docShots(console, "console-replace-found", fmt.Sprintf(`!!document.querySelector('#found-list [data-join-replace=%q]')`, deadID))
	console.click(fmt.Sprintf(`#found-list [data-join-replace=%q]`, deadID))
	console.waitVisible("#confirm-ok")
	console.click("#confirm-ok")
	console.waitFor("the new box ready", `document.querySelector('#join-progress').dataset.state === 'done'`, 3*time.Minute)
	console.waitFor("3 of 3 boxes working", `document.querySelector('#health-summary').dataset.working === '3'`, 30*time.Second)
	console.screenshot("netns-console-replace-done-tablet-ja")
	docShots(console, "console-replace-done", `document.querySelector('#join-progress').dataset.state === 'done'`)
	// The new box holds every order, from its own replica.
	s.waitEveryBoxHolds(append(live, fresh), sess, []int64{first, second}, 60*time.Second)
	// The old id is gone from the configuration, on every box.
	for _, b := range append(live, fresh) {
		var st struct {
			Nodes []struct{ ID string } `json:"nodes"`
		}
		if code := getJSON(plain, b.url()+"/api/cluster/status", &st); code != 200 {
			t.Fatalf("status of %s: %d", b.id, code)
		}
		for _, n := range st.Nodes {
			if n.ID == deadID {
				t.Fatalf("box %s still lists %s", b.id, deadID)
			}
		}
		if len(st.Nodes) != 3 {
			t.Fatalf("box %s lists %d members, want 3", b.id, len(st.Nodes))
		}
	}
	// Its certificate is refused on the cluster port.
	if err := dialWithCert(t, dead, deadID, live[0].ip+":7000"); err == nil {
		t.Fatalf("the removed box's certificate still opens the cluster port of %s", live[0].id)
	}
	// And a current member's certificate still does (the check refuses
	// the removed id, not everything).
	if err := dialWithCert(t, live[1], nodeIDOf(t, live[1]), live[0].ip+":7000"); err != nil {
		t.Fatalf("a member's certificate is refused: %v", err)
	}
}

// nodeIDOf reads the node id from the box's config (written by setup).
func nodeIDOf(t *testing.T, b *netBox) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(b.dir, "etc", "masterorder.toml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && strings.TrimSpace(k) == "node_id" {
			return strings.Trim(strings.TrimSpace(v), `"'`)
		}
	}
	t.Fatalf("no node_id in box %s's config", b.id)
	return ""
}

// dialWithCert opens the cluster port at addr with box b's cluster
// certificate (id) and sends one request on it: a refused certificate
// fails the handshake or the first read.
func dialWithCert(t *testing.T, b *netBox, id, addr string) error {
	t.Helper()
	tlsDir := filepath.Join(b.dir, "etc", "tls")
	cert, err := tls.LoadX509KeyPair(filepath.Join(tlsDir, id+".pem"), filepath.Join(tlsDir, id+"-key.pem"))
	if err != nil {
		t.Fatalf("box %s's certificate: %v", b.id, err)
	}
	caPEM, err := os.ReadFile(filepath.Join(tlsDir, "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	d := &net.Dialer{Timeout: 5 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, ServerName: strings.Split(addr, ":")[0], NextProtos: []string{"h2"}})
	if err != nil {
		return err
	}
	defer c.Close()
	// TLS 1.3 reports a refused client certificate on the first read.
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")); err != nil {
		return err
	}
	buf := make([]byte, 64)
	_, err = c.Read(buf)
	return err
}

// runWizardInBrowser walks the setup page of wz as an owner: waits for
// the three boxes, ticks them, fills the shop's form, creates the store
// and waits for the done page; a screenshot per step (docs/img uses them).
// The wizard's own box becomes a member midway, in the same process.
func runWizardInBrowser(t *testing.T, wz *tab, s *netStore, boxes []*netBox) {
	t.Helper()
	wz.waitFor("the boxes step", `!!document.querySelector('#step-boxes') && !document.querySelector('#step-boxes').hidden`, 30*time.Second)
	wz.waitFor("three boxes found", `document.querySelectorAll('#box-list input[type=checkbox]').length >= 3`, 60*time.Second)
	wz.screenshot("wizard-1-boxes-phone-ja")
	createStoreInWizard(wz, true)
}

// createStoreInWizard ticks every box found, fills the shop's form,
// creates the store and waits for the done page; with screenshots, one
// per step and a wait for the progress step to show.
func createStoreInWizard(wz *tab, screenshots bool) {
	shot := func(name string) {
		if screenshots {
			wz.screenshot(name)
		}
	}
	eval[bool](wz, `(() => { for (const c of document.querySelectorAll('#box-list input[type=checkbox]')) if (!c.checked) c.click(); return true; })()`)
	wz.click("#box-next")
	wz.waitVisible("#shop-form")
	wz.typeInto("#shop-name", "らーめん田中")
	wz.typeInto("#manager-pw", netnsManagerPW)
	wz.typeInto("#kitchen-pw", netnsKitchenPW)
	shot("wizard-2-shop-phone-ja")
	wz.click("#shop-create")
	if screenshots {
		wz.waitVisible("#step-progress")
		shot("wizard-3-progress-phone-ja")
	}
	wz.waitFor("the done page", `!!document.querySelector('#step-done') && !document.querySelector('#step-done').hidden`, 3*time.Minute)
	shot("wizard-4-done-phone-ja")
}

// TestNetnsOneBoxGrowsToThree: a store made of one box (the wizard warns,
// the owner goes on) takes an order; two blank boxes are switched on and
// the manager taps "Add this box" for each in the console's Boxes page;
// the store ends with three working boxes that all hold the order, and
// survives losing the first box.
func TestNetnsOneBoxGrowsToThree(t *testing.T) {
	l := newLAN(t)
	s := newNetStore(t, l)
	a := s.add("a", 11)
	s.startBlank(a)
	plain := &http.Client{Timeout: 5 * time.Second}
	if !waitTrue(30*time.Second, func() bool { return getJSON(plain, a.url()+"/setup/", nil) == 200 }) {
		t.Fatal("no setup page")
	}
	br := startBrowserFor(t, 6*time.Minute, chromedp.Flag("ignore-certificate-errors", true))
	wz := br.open("wizard", a.url()+"/setup/", phoneW, phoneH)
	wz.waitFor("one box found", `document.querySelectorAll('#box-list input[type=checkbox]').length === 1`, 60*time.Second)
	createStoreInWizard(wz, false)

	tc := setuptest.TabletClient(t, a.url())
	token := managerLogin(t, tc, a)
	staff := func(b *netBox, method, path string, body any) orderstest.Resp {
		return orderstest.Do(t, tc, method, "https://"+b.ip+path, map[string]string{"Authorization": "Bearer " + token}, body)
	}
	if r := staff(a, "PUT", "/api/staff/menu/gyoza", map[string]any{"name": "餃子", "nameEn": "Gyoza", "category": "sides", "price": 450, "available": true}); r.Status != 200 {
		t.Fatalf("menu: %d %s", r.Status, r.Body)
	}
	r := staff(a, "POST", "/api/staff/sessions", map[string]string{"tableId": "T1"})
	if r.Status != 200 {
		t.Fatalf("open table: %d %s", r.Status, r.Body)
	}
	var sess session
	r.Decode(t, &sess)
	phoneNS := l.join("phone", 50)
	p := newPhone(phoneNS, (&mdnsResolver{ns: phoneNS}).resolve)
	first, err := phoneGuestOrder(t, p, "http://masterorder.local", sess, 60*time.Second)
	if err != nil {
		t.Fatal(err)
	}

	console := br.open("console", "https://"+a.ip+"/staff/#cluster", tabletW, tabletH)
	console.loginAs(netnsManagerPW)
	console.waitFor("1 of 1 working", `document.querySelector('#health-summary').dataset.working === '1'`, 30*time.Second)
	console.screenshot("netns-console-one-box-tablet-ja")
	var grown []*netBox
	for i, id := range []string{"b", "c"} {
		b := s.add(id, 12+i)
		s.startBlank(b)
		grown = append(grown, b)
		console.waitFor("a new box listed", `!!document.querySelector('#found-list [data-join-add]:not([disabled])')`, 60*time.Second)
		console.click(`#found-list [data-join-add]`)
		console.waitVisible("#confirm-ok")
		console.click("#confirm-ok")
		console.waitFor("the new box ready", `document.querySelector('#join-progress').dataset.state === 'done'`, 3*time.Minute)
		console.waitFor(fmt.Sprintf("%d of %d working", i+2, i+2), fmt.Sprintf(`document.querySelector('#health-summary').dataset.working === '%d'`, i+2), 30*time.Second)
	}
	console.screenshot("netns-console-three-boxes-tablet-ja")
	all := append([]*netBox{a}, grown...)
	s.waitEveryBoxHolds(all, sess, []int64{first}, 60*time.Second)
	// Three boxes now: the store survives losing the first one.
	s.kill(a)
	second, err := phoneGuestOrder(t, p, "http://masterorder.local", sess, 60*time.Second)
	if err != nil {
		t.Fatalf("after the first box died: %v", err)
	}
	s.waitEveryBoxHolds(grown, sess, []int64{first, second}, 30*time.Second)
}
