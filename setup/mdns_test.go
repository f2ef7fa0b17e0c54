package setup

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestMDNSAnnounceAndBrowse runs an announcer and a browser in a network
// namespace the test creates (loopback with multicast on: the host's own
// network is never touched), and checks that the browser finds the box
// with its TXT record and nothing secret in it.
func TestMDNSAnnounceAndBrowse(t *testing.T) {
	if os.Getenv("MO_MDNS_IN_NETNS") == "1" {
		mdnsInNamespace(t)
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("not root: the mDNS test needs a network namespace of its own (ip netns add), which only root can create")
	}
	ip, err := exec.LookPath("ip")
	if err != nil {
		t.Skip("no ip command (iproute2): cannot create the test's network namespace")
	}
	ns := fmt.Sprintf("mo-mdns-%d", os.Getpid())
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(ip, args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v %s", strings.Join(args, " "), err, out)
		}
	}
	run("netns", "add", ns)
	t.Cleanup(func() { exec.Command(ip, "netns", "del", ns).Run() })
	run("-n", ns, "link", "set", "lo", "up")
	run("-n", ns, "link", "set", "lo", "multicast", "on")
	run("-n", ns, "route", "add", "224.0.0.0/4", "dev", "lo")
	cmd := exec.Command(ip, "netns", "exec", ns, os.Args[0], "-test.run", "^TestMDNSAnnounceAndBrowse$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "MO_MDNS_IN_NETNS=1")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	done := make(chan struct{})
	var out []byte
	go func() { out, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		cmd.Process.Kill()
		<-done
		t.Fatalf("the namespace half did not finish: %s", out)
	}
	if err != nil || !strings.Contains(string(out), "PASS") {
		t.Fatalf("in the namespace: %v\n%s", err, out)
	}
	t.Logf("in namespace %s:\n%s", ns, out)
}

// mdnsInNamespace is the half that runs inside the namespace.
func mdnsInNamespace(t *testing.T) {
	id, err := LoadIdentity(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a := Announcement{ID: id.ID, State: ModeSetup, Version: "test", Fingerprint: id.Fingerprint, Port: 8080}
	ann, err := Announce(a)
	if err != nil {
		t.Fatal(err)
	}
	defer ann.Close()
	var found []Found
	deadline := time.Now().Add(20 * time.Second)
	for len(found) == 0 && time.Now().Before(deadline) {
		found, err = Browse(context.Background(), time.Second)
		if err != nil {
			t.Logf("browse: %v", err)
		}
	}
	if len(found) != 1 {
		t.Fatalf("found %+v", found)
	}
	f := found[0]
	if f.ID != id.ID || f.Fingerprint != id.Fingerprint || f.State != ModeSetup || f.Version != "test" || !strings.HasSuffix(f.Addr, ":8080") || f.Via != "mdns" {
		t.Errorf("found %+v, announced %+v", f, a)
	}
	// A box that becomes a member says so.
	a.State = ModeMember
	if err := ann.Update(a); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		found, _ = Browse(context.Background(), time.Second)
		if len(found) == 1 && found[0].State == ModeMember {
			break
		}
	}
	if len(found) != 1 || found[0].State != ModeMember {
		t.Errorf("after the update: %+v", found)
	}
	ann.Close()
	// Three boxes in setup mode on one host (each binds 5353 with
	// SO_REUSEADDR, as beside an avahi-daemon): the wizard of the first
	// finds all three by mDNS alone, and reads their info over the
	// channel pinned to the announced fingerprints.
	var boxes []*testBox
	for i := 0; i < 3; i++ {
		boxes = append(boxes, newTestBox(t, t.TempDir(), func(o *Options) { o.MDNS = true }))
	}
	views := boxes[0].Wizard().Discover(context.Background(), "127.0.0.1")
	if len(views) != 3 || !views[0].Self {
		t.Fatalf("the wizard found %+v", views)
	}
	for _, v := range views {
		if v.Via != "mdns" {
			t.Errorf("box %s found via %s, want mdns", v.ShortCode, v.Via)
		}
	}
	for _, kv := range a.TXT() {
		k, _, _ := strings.Cut(kv, "=")
		if k != "id" && k != "state" && k != "version" && k != "fp" {
			t.Errorf("TXT announces %q", kv)
		}
	}
}
