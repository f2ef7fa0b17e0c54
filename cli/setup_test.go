package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"masterorder/api/apitest"
	"masterorder/node"
	"masterorder/node/nodetest"
	"masterorder/orders/staffauth"
	"masterorder/setup"
	"masterorder/setup/cluster"
	"masterorder/setup/setuptest"
)

// setupBox is one `masterorder run` in setup mode, in this process, with
// its own box layout under a temp dir.
type setupBox struct {
	layout     setup.Layout
	addr       string // setup page, then the member's HTTP
	httpsPort  int
	cancel     context.CancelFunc
	done       chan error
	extraFlags []string
}

const (
	setupManagerPW = "tonkotsu-2026-shop"
	setupKitchenPW = "kitchen screen 77"
)

// startSetupBoxes starts n unconfigured boxes on loopback that find each
// other through --probe. flags adds flags per box.
func startSetupBoxes(t *testing.T, n int, flags func(i int, l setup.Layout) []string) []*setupBox {
	t.Helper()
	boxes := make([]*setupBox, n)
	var addrs []string
	for i := range boxes {
		dir := t.TempDir()
		boxes[i] = &setupBox{layout: setup.Layout{EtcDir: filepath.Join(dir, "etc"), StateDir: filepath.Join(dir, "state"),
			BootDir: filepath.Join(dir, "boot"), SysRoot: filepath.Join(dir, "sys")},
			addr: "127.0.0.1:" + strconv.Itoa(nodetest.FreePort(t)), httpsPort: nodetest.FreePort(t)}
		os.MkdirAll(boxes[i].layout.BootDir, 0o755)
		addrs = append(addrs, boxes[i].addr)
	}
	for i, b := range boxes {
		args := []string{"--etc-dir", b.layout.EtcDir, "--state-dir", b.layout.StateDir, "--boot-dir", b.layout.BootDir,
			"--sys-root", b.layout.SysRoot, "--listen", b.addr, "--https-port", strconv.Itoa(b.httpsPort),
			"--raft-port", strconv.Itoa(nodetest.FreePort(t)), "--window-from-start", "--mdns=false", "--probe", strings.Join(addrs, ",")}
		if flags != nil {
			args = append(args, flags(i, b.layout)...)
		}
		b.extraFlags = args
		b.start(t)
	}
	for _, b := range boxes {
		waitHTTP(t, nil, "http://"+b.addr+"/setup/", 200)
	}
	return boxes
}

func (b *setupBox) start(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel, b.done = cancel, make(chan error, 1)
	go func() { b.done <- run(ctx, b.extraFlags, testEnv(io.Discard, io.Discard)) }()
	t.Cleanup(func() { b.stop(t) })
}

func (b *setupBox) stop(t *testing.T) {
	if b.cancel == nil {
		return
	}
	b.cancel()
	select {
	case <-b.done:
	case <-time.After(30 * time.Second):
		t.Error("box did not stop")
	}
	b.cancel = nil
}

// listBoxes asks the wizard of box b for the boxes it found.
func listBoxes(t *testing.T, b *setupBox) []setup.BoxView {
	t.Helper()
	var r struct{ Boxes []setup.BoxView }
	if code := jsonCall(t, http.DefaultClient, "GET", "http://"+b.addr+"/setup/api/boxes", nil, nil, &r); code != 200 {
		t.Fatalf("boxes: %d", code)
	}
	return r.Boxes
}

// boxConfig is the config setup wrote in the box layout l.
func boxConfig(t *testing.T, l setup.Layout) cluster.Config {
	t.Helper()
	raw, err := os.ReadFile(l.ConfigPath())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := cluster.ParseConfig(raw)
	if err != nil {
		t.Fatalf("%s: %v", l.ConfigPath(), err)
	}
	return cfg
}

// takesSetupPasswords: cfg's hashes are those of the passwords the tests
// give the wizard.
func takesSetupPasswords(cfg cluster.Config) bool {
	return staffauth.CheckPassword(cfg.Staff.PasswordHash, setupManagerPW) && staffauth.CheckPassword(cfg.Staff.KitchenPasswordHash, setupKitchenPW)
}

// hashFor is what the wizard's page sends for a password: its bcrypt
// hash at init's cost (the page's own bcrypt is held to Go's by
// ui.TestSetupPageHashesWithBcrypt; the browser test drives it).
func hashFor(t *testing.T, pw string) string {
	t.Helper()
	h, err := staffauth.HashPassword(pw)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// runWizard ticks ids on box b's wizard, creates and waits for the end.
func runWizard(t *testing.T, b *setupBox, ids []string, code string) setup.Progress {
	t.Helper()
	req := setup.CreateRequest{Boxes: ids, ShopName: "Ramen Tanaka", ManagerPasswordHash: hashFor(t, setupManagerPW),
		KitchenPasswordHash: hashFor(t, setupKitchenPW), TaxRatePercent: 10, SetupCode: code, TimeZone: "Asia/Tokyo"}
	if st := jsonCall(t, http.DefaultClient, "POST", "http://"+b.addr+"/setup/api/create", nil, req, nil); st != 202 {
		t.Fatalf("create: %d", st)
	}
	deadline := time.Now().Add(2 * time.Minute)
	var p setup.Progress
	for time.Now().Before(deadline) {
		// The wizard's own box becomes a member midway: a moment without
		// an answer is expected.
		if jsonCall(t, &http.Client{Timeout: 3 * time.Second}, "GET", "http://"+b.addr+"/setup/api/progress", nil, nil, &p) == 200 &&
			(p.State == "done" || p.State == "failed") {
			return p
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("wizard never finished: %+v", p)
	return p
}

// TestSetupWizardFormsCluster: three unconfigured boxes, formed through
// the wizard's HTTP API, end as one cluster with one leader, and every
// box takes a guest order; the claimed boxes stay members after a
// restart and refuse setup calls.
func TestSetupWizardFormsCluster(t *testing.T) {
	all := startSetupBoxes(t, 4, nil)
	boxes, rogue := all[:3], all[3]
	found := listBoxes(t, boxes[0])
	if len(found) != 4 || !found[0].Self {
		t.Fatalf("wizard found %+v, want 4 boxes, itself first", found)
	}
	rogueID := identityOf(t, rogue).ID
	var ids []string
	for _, f := range found {
		if len(f.ShortCode) != 4 || f.Hostname == "" {
			t.Errorf("box listed without short code or hostname: %+v", f)
		}
		if f.ID != rogueID { // the owner ticks three of the four
			ids = append(ids, f.ID)
		}
	}
	// The wizard takes bcrypt hashes, never a password (the page checks
	// init's strength rule before hashing), answered with the field to fix.
	manager, kitchen := hashFor(t, setupManagerPW), hashFor(t, setupKitchenPW)
	cheap, err := bcrypt.GenerateFromPassword([]byte(setupKitchenPW), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	form := func(change func(f map[string]any)) map[string]any {
		f := map[string]any{"boxes": ids, "shopName": "x", "taxRatePercent": 10, "managerPasswordHash": manager, "kitchenPasswordHash": kitchen}
		change(f)
		return f
	}
	for _, c := range []struct {
		what        string
		body        map[string]any
		code, field string
	}{
		{"a plain manager password", form(func(f map[string]any) { f["managerPassword"] = setupManagerPW }), "PLAIN_PASSWORD", "managerPassword"},
		{"a plain kitchen password", form(func(f map[string]any) { delete(f, "kitchenPasswordHash"); f["kitchenPassword"] = setupKitchenPW }), "PLAIN_PASSWORD", "kitchenPassword"},
		{"no manager hash", form(func(f map[string]any) { delete(f, "managerPasswordHash") }), "BAD_PASSWORD_HASH", "managerPasswordHash"},
		{"a password as the hash", form(func(f map[string]any) { f["managerPasswordHash"] = setupManagerPW }), "BAD_PASSWORD_HASH", "managerPasswordHash"},
		{"a cost-4 hash", form(func(f map[string]any) { f["kitchenPasswordHash"] = string(cheap) }), "BAD_PASSWORD_HASH", "kitchenPasswordHash"},
		{"a cost-13 hash", form(func(f map[string]any) { f["kitchenPasswordHash"] = strings.Replace(kitchen, "$10$", "$13$", 1) }), "BAD_PASSWORD_HASH", "kitchenPasswordHash"},
		{"a hash cut short", form(func(f map[string]any) { f["kitchenPasswordHash"] = kitchen[:59] }), "BAD_PASSWORD_HASH", "kitchenPasswordHash"},
		{"one hash for both", form(func(f map[string]any) { f["kitchenPasswordHash"] = manager }), "SAME_PASSWORDS", "kitchenPasswordHash"},
		// The boxes' own rule ([shop] time_zone), before any box is claimed.
		{"a zone no box knows", form(func(f map[string]any) { f["timeZone"] = "Asia/Atlantis" }), "INVALID_TIME_ZONE", "timeZone"},
		{"the box's own zone by name", form(func(f map[string]any) { f["timeZone"] = "Local" }), "INVALID_TIME_ZONE", "timeZone"},
	} {
		var r struct{ ReasonCode, Field, Message string }
		if st := jsonCall(t, http.DefaultClient, "POST", "http://"+boxes[0].addr+"/setup/api/create", nil, c.body, &r); st != 400 || r.ReasonCode != c.code || r.Field != c.field {
			t.Errorf("create with %s: %d %+v, want 400 %s on %s", c.what, st, r, c.code, c.field)
		}
	}
	start := time.Now()
	p := runWizard(t, boxes[0], ids, "")
	t.Logf("create → every box ready: %v", time.Since(start).Round(10*time.Millisecond))
	if p.State != "done" || p.Done == nil {
		t.Fatalf("wizard: %+v", p)
	}
	for _, b := range p.Boxes {
		if b.Step != setup.StepReady {
			t.Errorf("box %s ended at %q", b.ShortCode, b.Step)
		}
	}
	for i, b := range boxes {
		if b.layout.ModeOf() != setup.ModeMember {
			t.Errorf("box %d: mode %s after the wizard", i, b.layout.ModeOf())
		}
	}
	// The box nobody ticked was never claimed and is in no cluster.
	if rogue.layout.ModeOf() != setup.ModeSetup {
		t.Errorf("the unticked box is %s", rogue.layout.ModeOf())
	}
	if info, err := setup.Probe(context.Background(), rogue.addr); err != nil || info.State != setup.ModeSetup {
		t.Errorf("the unticked box: %+v %v", info, err)
	}
	// Every box's config holds the page's hashes as init writes them,
	// and no file on any box holds a password.
	var managerHashes []string
	for i, b := range boxes {
		cfg := boxConfig(t, b.layout)
		if !takesSetupPasswords(cfg) {
			t.Errorf("box %d: the config's hashes do not take the wizard's passwords", i)
		}
		managerHashes = append(managerHashes, cfg.Staff.PasswordHash)
		if cfg.Shop.TimeZone != "Asia/Tokyo" {
			t.Errorf("box %d: time_zone %q, want the wizard's Asia/Tokyo", i, cfg.Shop.TimeZone)
		}
		filepath.WalkDir(filepath.Dir(b.layout.EtcDir), func(path string, d os.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				if data, err := os.ReadFile(path); err == nil && (bytes.Contains(data, []byte(setupManagerPW)) || bytes.Contains(data, []byte(setupKitchenPW))) {
					t.Errorf("box %d: %s holds a password", i, path)
				}
			}
			return nil
		})
	}
	if managerHashes[0] != managerHashes[1] || managerHashes[1] != managerHashes[2] {
		t.Errorf("the boxes hold different manager hashes: %v", managerHashes)
	}
	tab := setuptest.TabletClient(t, "http://"+boxes[1].addr)
	auths := make([]map[string]string, len(boxes))
	for i, b := range boxes {
		base := "https://127.0.0.1:" + strconv.Itoa(b.httpsPort)
		var login struct{ Token string }
		if st := jsonCall(t, tab, "POST", base+"/api/staff/login", nil, map[string]string{"password": setupManagerPW}, &login); st != 200 {
			t.Fatalf("box %d: manager login over HTTPS: %d", i, st)
		}
		auth := map[string]string{"Authorization": "Bearer " + login.Token}
		auths[i] = auth
		var st struct {
			Nodes []struct{ ID string }
		}
		jsonCall(t, tab, "GET", base+"/api/cluster/status", auth, nil, &st)
		if len(st.Nodes) != 3 {
			t.Fatalf("box %d status: %+v", i, st)
		}
		if i == 0 {
			item := map[string]any{"name": "醤油ラーメン", "nameEn": "Shoyu ramen", "category": "noodles", "price": 900, "available": true}
			if code := jsonCall(t, tab, "PUT", base+"/api/staff/menu/ramen", auth, item, nil); code != 200 {
				t.Fatalf("menu: %d", code)
			}
		}
		var sess struct{ SessionID, Pin string }
		if code := jsonCall(t, tab, "POST", base+"/api/staff/sessions", auth, map[string]string{"tableId": fmt.Sprintf("T%d", i+1)}, &sess); code != 200 {
			t.Fatalf("box %d: open table: %d", i, code)
		}
		var order struct {
			Allowed bool
			OrderID int64
		}
		hdr := map[string]string{"Idempotency-Key": fmt.Sprintf("550e8400-e29b-41d4-a716-44665544000%d", i), "X-MasterOrder-Client-Id": fmt.Sprintf("guest-setuptest-%d", i), "X-Session-PIN": sess.Pin}
		guest := &http.Client{Timeout: 15 * time.Second}
		if code := jsonCall(t, guest, "POST", "http://"+b.addr+"/api/guest/sessions/"+sess.SessionID+"/orders", hdr,
			map[string]any{"items": []map[string]any{{"menuId": "ramen", "quantity": 1}}}, &order); code != 200 || !order.Allowed {
			t.Errorf("box %d: guest order: %d %+v", i, code, order)
		}
	}
	// One leader, named alike by every box. Asked of all three in one
	// pass, again until they agree: on a loaded machine an election may
	// fall between two boxes' answers, and the store handles that; what
	// is judged is that the three formed one cluster.
	var leaders map[string]bool
	waitFor(t, "every box to name one leader", func() bool {
		leaders = map[string]bool{}
		for i, b := range boxes {
			var st struct{ Leader *struct{ ID string } }
			jsonCall(t, tab, "GET", "https://127.0.0.1:"+strconv.Itoa(b.httpsPort)+"/api/cluster/status", auths[i], nil, &st)
			if st.Leader == nil {
				return false
			}
			leaders[st.Leader.ID] = true
		}
		return len(leaders) == 1
	})
	// A member refuses every setup call, over TLS or not.
	if _, err := setup.Probe(context.Background(), boxes[2].addr); err == nil {
		t.Error("a member answered the claim channel's info")
	}
	var refusal struct{ ReasonCode string }
	if code := jsonCall(t, http.DefaultClient, "POST", "http://"+boxes[2].addr+"/setup/api/create", nil, map[string]any{}, &refusal); code != 409 || refusal.ReasonCode != "NOT_IN_SETUP" {
		t.Errorf("member's wizard create: %d %s", code, refusal.ReasonCode)
	}
	if code := jsonCall(t, http.DefaultClient, "POST", "http://"+boxes[2].addr+"/setup/v1/claim", nil, map[string]any{"claimer": "x"}, &refusal); code != 409 || refusal.ReasonCode != "NOT_IN_SETUP" {
		t.Errorf("member's claim: %d %s", code, refusal.ReasonCode)
	}
	// Restarted, a member comes back a member, never in setup mode.
	boxes[2].stop(t)
	boxes[2].start(t)
	waitHTTP(t, nil, "http://"+boxes[2].addr+"/readyz", 200)
	if code := jsonCall(t, http.DefaultClient, "GET", "http://"+boxes[2].addr+"/setup/api/boxes", nil, nil, &refusal); code != 409 {
		t.Errorf("restarted member's wizard: %d", code)
	}
	for _, path := range []string{"/ca.crt", "/ca.mobileconfig"} {
		res, err := apitest.Client(t, nil).Get("http://" + boxes[2].addr + path)
		if err != nil || res.StatusCode != 200 {
			t.Errorf("%s on a member: %v %v", path, err, res)
		} else {
			res.Body.Close()
		}
	}
}

func identityOf(t *testing.T, b *setupBox) setup.Identity {
	t.Helper()
	id, err := setup.LoadIdentity(b.layout.SetupDir())
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestSetupMemberStartsAsRunDoes: a box the wizard formed becomes a
// member in the same process the way `run --config` starts one, with the
// memory limit applied (it once ran without it until its next restart).
func TestSetupMemberStartsAsRunDoes(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "")
	prev := debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
	boxes := startSetupBoxes(t, 1, nil)
	found := listBoxes(t, boxes[0])
	if p := runWizard(t, boxes[0], []string{found[0].ID}, ""); p.State != "done" {
		t.Fatalf("wizard: %+v", p)
	}
	waitHTTP(t, nil, "http://"+boxes[0].addr+"/readyz", 200)
	if got := debug.SetMemoryLimit(-1); got != node.DefaultMemoryLimit {
		t.Errorf("memory limit of the member formed by the wizard: %d, want %d (node.SetMemoryLimit)", got, node.DefaultMemoryLimit)
	}
}
