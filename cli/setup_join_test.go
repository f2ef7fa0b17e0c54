package cli

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"masterorder/httpapi"
	"masterorder/node"
	"masterorder/node/nodetest"
	"masterorder/orders"
	"masterorder/setup"
	"masterorder/setup/join"
	"masterorder/setup/setuptest"
)

// joinBox is a box in setup mode in this process whose member node the
// test can reach (what the console's handlers hold).
type joinBox struct {
	*setup.Box
	layout setup.Layout
	https  int
	mu     sync.Mutex
	node   *node.Node
	cancel context.CancelFunc
	done   chan error
}

func (b *joinBox) member() *node.Node {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.node
}

// startJoinBox starts a box; mod may change its options (the probe list,
// the listen address) before it starts.
func startJoinBox(t *testing.T, mod ...func(*setup.Options)) *joinBox {
	t.Helper()
	dir := t.TempDir()
	jb := &joinBox{layout: setup.Layout{EtcDir: filepath.Join(dir, "etc"), StateDir: filepath.Join(dir, "state"), SysRoot: filepath.Join(dir, "sys")},
		https: nodetest.FreePort(t)}
	log := newLogger(node.LogConfig{Level: "error"}, io.Discard)
	ctx, members := withSetupMembers(context.Background(), testEnv(io.Discard, io.Discard))
	t.Cleanup(members.stop)
	members.started = func(m *member) {
		jb.mu.Lock()
		jb.node = m.node
		jb.mu.Unlock()
	}
	opts := setup.Options{Layout: jb.layout, Listen: "127.0.0.1:" + strconv.Itoa(nodetest.FreePort(t)), HTTPSPort: jb.https,
		RaftPort: nodetest.FreePort(t), WindowFromStart: true, Version: "test", Logger: log, Start: members.start}
	for _, m := range mod {
		m(&opts)
	}
	b, err := setup.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Listen(); err != nil {
		t.Fatal(err)
	}
	jb.Box = b
	ctx, cancel := context.WithCancel(ctx)
	jb.cancel, jb.done = cancel, make(chan error, 1)
	go func() { jb.done <- members.outcome(ctx, b.Run(ctx)) }()
	t.Cleanup(jb.stop)
	return jb
}

func (b *joinBox) stop() {
	if b.cancel != nil {
		b.cancel()
		<-b.done
		b.cancel = nil
	}
}

// TestSetupGrowAndReplace: a one-box store made by the wizard grows to
// three boxes through AddToCluster (the console's "add this box"), then a
// dead box is replaced by a fresh one ("replace b with this box"): remove
// before add, and the new box holds what the store held.
func TestSetupGrowAndReplace(t *testing.T) {
	a := startJoinBox(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	found := setup.Find(ctx, setup.FindOptions{Probe: []string{a.Addr()}})
	if len(found) != 1 {
		t.Fatalf("found %+v", found)
	}
	p := runWizard(t, &setupBox{addr: a.Addr()}, []string{found[0].ID}, "")
	if p.State != "done" {
		t.Fatalf("one-box wizard: %+v", p)
	}
	waitFor(t, "a member", func() bool { return a.member() != nil && a.member().Ready() })
	cfgA, err := orders.LoadConfig(a.layout.ConfigPath())
	if err != nil {
		t.Fatal(err)
	}
	add := func(target *joinBox, replaces string) join.Joined {
		t.Helper()
		c := setup.Find(ctx, setup.FindOptions{Probe: []string{target.Addr()}})
		if len(c) != 1 {
			t.Fatalf("target not in setup mode: %+v", c)
		}
		j, err := join.AddToCluster(ctx, a.member(), join.Request{Config: cfgA, TLSDir: a.layout.TLSDir(), Target: c[0].Found, Replaces: replaces})
		if err != nil {
			t.Fatalf("add %s: %v", target.Addr(), err)
		}
		waitFor(t, j.NodeID+" ready", func() bool { return target.member() != nil && target.member().Ready() })
		return j
	}
	b, c := startJoinBox(t), startJoinBox(t)
	if j := add(b, ""); j.NodeID != "b" {
		t.Errorf("second box got id %s", j.NodeID)
	}
	add(c, "")
	if n := len(a.member().Members()); n != 3 {
		t.Fatalf("%d members after growing", n)
	}
	// Something for the replacement to hold.
	tab := setuptest.TabletClient(t, "http://"+a.Addr())
	base := "https://127.0.0.1:" + strconv.Itoa(a.https)
	var login struct{ Token string }
	if st := jsonCall(t, tab, "POST", base+"/api/staff/login", nil, map[string]string{"password": setupManagerPW}, &login); st != 200 {
		t.Fatalf("login: %d", st)
	}
	auth := map[string]string{"Authorization": "Bearer " + login.Token}
	if st := jsonCall(t, tab, "PUT", base+"/api/staff/menu/ramen", auth, map[string]any{"name": "ラーメン", "category": "noodles", "price": 900, "available": true}, nil); st != 200 {
		t.Fatalf("menu: %d", st)
	}
	// b dies for good; d replaces it.
	b.stop()
	d := startJoinBox(t)
	j := add(d, "b")
	if j.NodeID != "d" {
		t.Errorf("replacement got id %s (ids are never reused)", j.NodeID)
	}
	ids := map[string]bool{}
	for _, m := range a.member().Members() {
		ids[m.ID] = true
	}
	if len(ids) != 3 || ids["b"] || !ids["d"] {
		t.Errorf("members after replacing b: %v", ids)
	}
	waitFor(t, "the menu on d", func() bool {
		var menu struct{ Items []struct{ MenuID string } }
		base := "https://127.0.0.1:" + strconv.Itoa(d.https)
		return jsonCall(t, tab, "GET", base+"/api/staff/menu", auth, nil, &menu) == 200 && len(menu.Items) == 1
	})
}

// TestSetupFormsStoreWhenOneBoxFailsItsPush: of three ticked boxes, one
// refuses its config (its card cannot be written). The other two still
// form the store (a majority of three), the page says which box is
// missing and why in words, that box is given back to setup mode, and
// the console's "Replace c with this box" brings it in once its card
// works: three members, none of them c.
func TestSetupFormsStoreWhenOneBoxFailsItsPush(t *testing.T) {
	addrs := make([]string, 3)
	for i := range addrs {
		addrs[i] = "127.0.0.1:" + strconv.Itoa(nodetest.FreePort(t))
	}
	boxes := make([]*joinBox, 3)
	for i := range boxes {
		boxes[i] = startJoinBox(t, func(o *setup.Options) {
			o.Listen, o.Probe = addrs[i], addrs
			if i == 2 { // where its TLS folder goes, a file: writing the config fails
				os.MkdirAll(o.Layout.EtcDir, 0o755)
				os.WriteFile(o.Layout.TLSDir(), []byte("not a folder"), 0o644)
			}
		})
	}
	a, c := boxes[0], boxes[2]
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var ids []string
	for _, b := range boxes {
		f := setup.Find(ctx, setup.FindOptions{Probe: []string{b.Addr()}})
		if len(f) != 1 {
			t.Fatalf("found %+v at %s", f, b.Addr())
		}
		ids = append(ids, f[0].ID)
	}
	p := runWizard(t, &setupBox{addr: a.Addr()}, ids, "")
	if p.State != "done" || p.Done == nil || len(p.Done.Boxes) != 2 {
		t.Fatalf("wizard: %+v", p)
	}
	for i, b := range p.Boxes {
		switch {
		case i < 2 && (b.Step != setup.StepReady || b.Error != ""):
			t.Errorf("box %s: %+v", b.NodeID, b)
		case i == 2 && (b.Error != "CARD_WRITE_FAILED" || b.NodeID != "c" || b.Message == "" || b.Message == b.Error):
			t.Errorf("the box that failed: %+v", b)
		}
	}
	// The page asks in English and gets the words in English.
	var en setup.Progress
	jsonCall(t, http.DefaultClient, "GET", "http://"+a.Addr()+"/setup/api/progress", map[string]string{"Accept-Language": "en"}, nil, &en)
	if len(en.Boxes) != 3 || en.Boxes[2].Message != httpapi.Message("CARD_WRITE_FAILED", true) {
		t.Errorf("English progress: %+v", en)
	}
	if m := c.layout.ModeOf(); m != setup.ModeSetup {
		t.Fatalf("the box that failed is %s, want given back to setup mode", m)
	}
	waitFor(t, "a and b ready", func() bool {
		return a.member() != nil && a.member().Ready() && boxes[1].member() != nil && boxes[1].member().Ready()
	})
	// Its card is mended; the manager replaces c with it from the console.
	if err := os.Remove(c.layout.TLSDir()); err != nil {
		t.Fatal(err)
	}
	cfgA, err := orders.LoadConfig(a.layout.ConfigPath())
	if err != nil {
		t.Fatal(err)
	}
	found := setup.Find(ctx, setup.FindOptions{Probe: []string{c.Addr()}})
	if len(found) != 1 {
		t.Fatalf("c not in setup mode: %+v", found)
	}
	j, err := join.AddToCluster(ctx, a.member(), join.Request{Config: cfgA, TLSDir: a.layout.TLSDir(), Target: found[0].Found, Replaces: "c"})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, j.NodeID+" ready", func() bool { return c.member() != nil && c.member().Ready() })
	ids2 := map[string]bool{}
	for _, m := range a.member().Members() {
		ids2[m.ID] = true
	}
	if len(ids2) != 3 || ids2["c"] || !ids2[j.NodeID] {
		t.Errorf("members after replacing c: %v", ids2)
	}
}
