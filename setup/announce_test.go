package setup

import (
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/mdns"
	"github.com/miekg/dns"
)

// fakeLAN is this machine's addresses as a test sets them, and the mDNS
// zones an Announcer served from them (no socket is opened).
type fakeLAN struct {
	mu     sync.Mutex
	ips    []net.IP
	looks  int // how often the addresses were looked at
	live   int // servers started and not shut down
	served chan mdns.Zone
}

func newFakeLAN() *fakeLAN { return &fakeLAN{served: make(chan mdns.Zone, 16)} }

func (f *fakeLAN) set(ips ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ips = nil
	for _, s := range ips {
		f.ips = append(f.ips, net.ParseIP(s).To4())
	}
}

func (f *fakeLAN) localIPs() []net.IP {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.looks++
	return slices.Clone(f.ips)
}

func (f *fakeLAN) serve(z mdns.Zone) (func(), error) {
	f.mu.Lock()
	f.live++
	f.mu.Unlock()
	f.served <- z
	var once sync.Once
	return func() {
		once.Do(func() {
			f.mu.Lock()
			f.live--
			f.mu.Unlock()
		})
	}, nil
}

func (f *fakeLAN) state() (looks, live int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.looks, f.live
}

// next is the next zone served, within a bound far above the test's
// interval (a busy machine delays ticks, it does not lose them).
func (f *fakeLAN) next(t *testing.T, what string) mdns.Zone {
	t.Helper()
	select {
	case z := <-f.served:
		return z
	case <-time.After(10 * time.Second):
		t.Fatalf("not announced again: %s", what)
		return nil
	}
}

// waitLooks waits until the addresses were looked at n more times: the
// rewatch ran n ticks (each after the previous tick's update returned).
func (f *fakeLAN) waitLooks(t *testing.T, n int) {
	t.Helper()
	from, _ := f.state()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if looks, _ := f.state(); looks >= from+n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the addresses were not looked at again %d times", n)
		}
		time.Sleep(time.Millisecond)
	}
}

// answers is what the zone answers a DNS-SD browse (PTR for the service
// type, as Browse asks): the A addresses and the TXT record.
func answers(z mdns.Zone) (addrs, txt []string) {
	for _, rr := range z.Records(dns.Question{Name: ServiceType + ".local.", Qtype: dns.TypePTR, Qclass: dns.ClassINET}) {
		switch r := rr.(type) {
		case *dns.A:
			addrs = append(addrs, r.A.String())
		case *dns.TXT:
			txt = append(txt, r.Txt...)
		}
	}
	slices.Sort(addrs)
	return addrs, txt
}

// TestAnnounceFollowsAddressChanges: a box powered on before its cable is
// plugged in (no address), then given one, then a new DHCP lease, is
// announced on each new address without a restart, with only one server
// answering at a time, and never restarted while nothing changed.
func TestAnnounceFollowsAddressChanges(t *testing.T) {
	lan := newFakeLAN()
	a := Announcement{ID: "0a1b2c3d4e5f", State: ModeSetup, Version: "test", Fingerprint: strings.Repeat("ab", 32), Port: 8080}
	ann, err := announce(a, 5*time.Millisecond, lan.localIPs, lan.serve, func() bool { return true })
	if err == nil {
		t.Fatal("announced with no address")
	}
	defer ann.Close()

	lan.set("192.168.1.20")
	if addrs, txt := answers(lan.next(t, "the cable is plugged in")); !slices.Equal(addrs, []string{"192.168.1.20"}) || !slices.Contains(txt, "state=setup") {
		t.Fatalf("announced %v %v, want 192.168.1.20 in setup", addrs, txt)
	}

	// Nothing changed for a few ticks: the server is left answering.
	lan.waitLooks(t, 3)
	if _, live := lan.state(); live != 1 || len(lan.served) != 0 {
		t.Fatalf("unchanged addresses: %d servers live, %d restarts", live, len(lan.served))
	}

	// A new lease, with a second interface up.
	lan.set("192.168.1.37", "10.0.0.5")
	if addrs, _ := answers(lan.next(t, "a new lease")); !slices.Equal(addrs, []string{"10.0.0.5", "192.168.1.37"}) {
		t.Fatalf("announced %v after the new lease", addrs)
	}
	lan.waitLooks(t, 1)
	if _, live := lan.state(); live != 1 {
		t.Fatalf("%d servers live after the new lease, want the old one shut down", live)
	}

	// The box became a member; a later address change keeps saying so.
	a.State = ModeMember
	if err := ann.Update(a); err != nil {
		t.Fatal(err)
	}
	if _, txt := answers(lan.next(t, "the update")); !slices.Contains(txt, "state=member") {
		t.Fatalf("update announced %v", txt)
	}
	lan.set("192.168.1.38")
	if addrs, txt := answers(lan.next(t, "a lease after the update")); !slices.Equal(addrs, []string{"192.168.1.38"}) || !slices.Contains(txt, "state=member") {
		t.Fatalf("announced %v %v, want 192.168.1.38 as a member", addrs, txt)
	}

	lan.waitLooks(t, 1) // that update has returned
	ann.Close()
	if _, live := lan.state(); live != 0 {
		t.Fatalf("%d servers live after Close", live)
	}
}

// TestAnnounceWaitsForTheMulticastRoute: a new lease comes as an address
// first and its routes a moment later; a server started in between
// cannot join the IPv4 group. The box is announced again once the route
// is there (the same addresses), then left alone.
func TestAnnounceWaitsForTheMulticastRoute(t *testing.T) {
	lan := newFakeLAN()
	var route atomic.Bool
	a := Announcement{ID: "0a1b2c3d4e5f", State: ModeMember, Version: "test", Fingerprint: strings.Repeat("ab", 32), Port: 80}
	lan.set("10.78.0.23")
	ann, err := announce(a, 5*time.Millisecond, lan.localIPs, lan.serve, route.Load)
	if err != nil {
		t.Fatal(err)
	}
	defer ann.Close()
	lan.next(t, "the address, no route yet")
	lan.next(t, "still no route: served again")
	route.Store(true)
	// Served again once the route is there (a tick may already have been
	// under way without it), then never again while nothing changes.
	last := lan.next(t, "the route is there")
	deadline := time.Now().Add(10 * time.Second)
	for {
		lan.waitLooks(t, 3)
		if len(lan.served) == 0 {
			break
		}
		for len(lan.served) > 0 {
			last = <-lan.served
		}
		if time.Now().After(deadline) {
			t.Fatal("served again and again with the route there")
		}
	}
	if addrs, _ := answers(last); !slices.Equal(addrs, []string{"10.78.0.23"}) {
		t.Fatalf("announced %v", addrs)
	}
}
