//go:build netns

package browsertest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// lan is a store LAN made of Linux network namespaces: a namespace that
// holds only a bridge (the store's switch), and one namespace per box or
// phone, each joined to the bridge by a veth pair, on 10.77.0.0/24 with
// real multicast (mDNS). The host gets a leg on the bridge too
// (10.77.0.254), so the test's Chromium and HTTP clients reach the boxes.
// Everything is created under a random prefix and removed when the test
// ends, on every path: deleting a namespace deletes its veths, and the
// host's leg is the peer of one of them.
type lan struct {
	t      *testing.T
	prefix string // "mo" + 4 hex digits: interface names stay under 15 bytes
	bridge string // the namespace holding the bridge
	mu     sync.Mutex
	spaces []string
}

const (
	lanNet    = "10.77.0."
	lanHostIP = lanNet + "254"
)

// newLAN needs root and iproute2; without them the test is skipped
// (CI runs it as root: .ci/run).
func newLAN(t *testing.T) *lan {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the network-namespace store needs root (CI runs it as root)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("the network-namespace store needs iproute2's ip")
	}
	var b [2]byte
	rand.Read(b[:])
	l := &lan{t: t, prefix: "mo" + hex.EncodeToString(b[:])}
	t.Cleanup(l.remove)
	l.bridge = l.prefix + "-lan"
	l.ip("netns", "add", l.bridge)
	l.track(l.bridge)
	l.ipIn(l.bridge, "link", "add", "br0", "type", "bridge")
	l.ipIn(l.bridge, "link", "set", "br0", "up")
	l.ipIn(l.bridge, "link", "set", "lo", "up")
	// The host's leg: its peer lives in the bridge namespace, so removing
	// that namespace removes the leg too.
	host := l.prefix + "h"
	l.ip("link", "add", host, "type", "veth", "peer", "name", "up0", "netns", l.bridge)
	l.ipIn(l.bridge, "link", "set", "up0", "master", "br0", "up")
	l.ip("addr", "add", lanHostIP+"/24", "dev", host)
	l.ip("link", "set", host, "up")
	return l
}

func (l *lan) track(ns string) {
	l.mu.Lock()
	l.spaces = append(l.spaces, ns)
	l.mu.Unlock()
}

// remove deletes every namespace the test made (boxes and phones first,
// the bridge last).
func (l *lan) remove() {
	l.mu.Lock()
	spaces := append([]string(nil), l.spaces...)
	l.mu.Unlock()
	for i := len(spaces) - 1; i >= 0; i-- {
		if out, err := exec.Command("ip", "netns", "del", spaces[i]).CombinedOutput(); err != nil {
			l.t.Logf("ip netns del %s: %v %s", spaces[i], err, out)
		}
	}
}

func (l *lan) ip(args ...string) {
	l.t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		l.t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func (l *lan) ipIn(ns string, args ...string) {
	l.t.Helper()
	l.ip(append([]string{"-n", ns}, args...)...)
}

// join makes a namespace for one device (a box, a phone) with address
// lanNet+host on the bridge, and returns its name.
func (l *lan) join(name string, host int) string {
	l.t.Helper()
	ns := l.prefix + "-" + name
	l.ip("netns", "add", ns)
	l.track(ns)
	port := fmt.Sprintf("%s%s", l.prefix, name)
	if len(port) > 15 {
		port = port[:15]
	}
	l.ip("link", "add", port, "netns", l.bridge, "type", "veth", "peer", "name", "eth0", "netns", ns)
	l.ipIn(l.bridge, "link", "set", port, "master", "br0", "up")
	l.ipIn(ns, "link", "set", "lo", "up")
	l.ipIn(ns, "addr", "add", fmt.Sprintf("%s%d/24", lanNet, host), "dev", "eth0")
	l.ipIn(ns, "link", "set", "eth0", "up")
	// Multicast (224.0.0.251, mDNS) leaves by eth0.
	l.ipIn(ns, "route", "add", "default", "dev", "eth0")
	return ns
}

// command runs name inside namespace ns.
func (l *lan) command(ns string, name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", ns, name}, args...)...)
}

// inNS runs fn on an OS thread that has entered namespace ns; sockets fn
// opens stay in that namespace after it returns. The thread is thrown
// away afterwards (it stays locked), so no other goroutine runs in ns.
func inNS(ns string, fn func()) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		f, err := os.Open("/run/netns/" + ns)
		if err != nil {
			errc <- err
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("setns %s: %w", ns, err)
			return
		}
		fn()
		errc <- nil
	}()
	return <-errc
}

// phone is a guest's phone in its own namespace: it resolves names
// through resolve (mDNS) and talks HTTP from inside the namespace.
type phone struct {
	ns      string
	resolve func(ctx context.Context, host string) (net.IP, error)
	hc      *http.Client
}

// dialInNS dials from namespace ns, resolving a name (not an address)
// with resolve, as a device on the store LAN does.
func dialInNS(ns string, resolve func(ctx context.Context, host string) (net.IP, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		if net.ParseIP(host) == nil {
			ip, err := resolve(ctx, host)
			if err != nil {
				return nil, err
			}
			addr = net.JoinHostPort(ip.String(), port)
		}
		var c net.Conn
		var derr error
		if err := inNS(ns, func() { c, derr = (&net.Dialer{Timeout: 2 * time.Second}).DialContext(ctx, network, addr) }); err != nil {
			return nil, err
		}
		return c, derr
	}
}

func newPhone(ns string, resolve func(ctx context.Context, host string) (net.IP, error)) *phone {
	p := &phone{ns: ns, resolve: resolve}
	tr := &http.Transport{
		DisableKeepAlives: true, // every request resolves and connects anew, as after a reload
		DialContext:       dialInNS(ns, p.resolve),
	}
	p.hc = &http.Client{Transport: tr, Timeout: 5 * time.Second}
	return p
}
