// Package lanname answers the store's one name for guests on the LAN
// (by default masterorder.local) by multicast DNS, so the QR codes need no
// router setting, DNS server or floating address. Every member runs an
// Answerer; the box decides which one is active (node: the Raft leader),
// so exactly one live box answers at a time, and when it dies the next
// leader answers within an election. Records carry a short TTL so a
// phone's resolver asks again soon, and a box that becomes the answerer
// announces its address at once (RFC 6762 §8.3, cache-flush bit set) so
// resolvers that listen to multicast replace what they cached.
//
// It uses github.com/hashicorp/mdns's server with a custom Zone: the
// server binds 5353 with SO_REUSEADDR (net.ListenMulticastUDP), so it
// coexists with an avahi-daemon on the same box, and answers every query
// by unicast to the asker, which is what one-shot resolvers (a phone's
// system resolver, Resolve below) expect.
package lanname

import (
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/mdns"
	"github.com/miekg/dns"
)

// DefaultName is the name a store answers unless its config names another.
const DefaultName = "masterorder.local"

// SetupName is the name every box in setup mode answers, so the owner's
// phone reaches a setup page with no address typed (the owner's guide
// carries it as a QR code). Members never answer it.
const SetupName = "masterorder-setup.local"

// TTL of the answer, in seconds: short, so a resolver that cached the
// address of a box that died asks again within a few seconds.
const TTL = 5

var mdnsGroup = &net.UDPAddr{IP: net.IPv4(224, 0, 0, 251), Port: 5353}

// CheckName tells whether name is a usable mDNS host name: labels of
// letters, digits and hyphens, ending in .local.
func CheckName(name string) error {
	n := strings.TrimSuffix(strings.ToLower(name), ".")
	if !strings.HasSuffix(n, ".local") || n == ".local" {
		return errors.New(`must end in ".local" (for example "masterorder.local")`)
	}
	for _, label := range strings.Split(n, ".") {
		if label == "" || len(label) > 63 {
			return errors.New("has an empty or too long label")
		}
		for i, r := range label {
			ok := r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' && i > 0 && i < len(label)-1
			if !ok {
				return fmt.Errorf("label %q: only letters, digits and inner hyphens", label)
			}
		}
	}
	return nil
}

// Answerer answers one name with this box's IPv4 addresses while active.
type Answerer struct {
	fqdn   string
	addrs  func() []net.IP
	log    *slog.Logger
	active atomic.Bool
	srv    *mdns.Server

	mu     sync.Mutex
	closed bool
	done   chan struct{}
}

// Start listens for mDNS queries on every multicast interface. addrs
// gives the addresses to answer (nil: every up, non-loopback IPv4
// address of the box). It starts inactive.
func Start(name string, addrs func() []net.IP, logger *slog.Logger) (*Answerer, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	if addrs == nil {
		addrs = InterfaceAddrs
	}
	a := &Answerer{fqdn: dns.Fqdn(strings.ToLower(name)), addrs: addrs, log: logger, done: make(chan struct{})}
	srv, err := mdns.NewServer(&mdns.Config{Zone: a, Logger: log.New(slogWriter{logger}, "", 0)})
	if err != nil {
		return nil, fmt.Errorf("mdns name %s: %w", name, err)
	}
	a.srv = srv
	return a, nil
}

// Name is the name answered, without the trailing dot.
func (a *Answerer) Name() string { return strings.TrimSuffix(a.fqdn, ".") }

// SetActive makes this box the one that answers (or not). Becoming active
// announces the address twice, a second apart, as RFC 6762 asks.
func (a *Answerer) SetActive(on bool) {
	if a.active.Swap(on) == on || !on {
		return
	}
	a.log.Info("answering the store's name on the LAN", "name", a.Name(), "addrs", a.addrs())
	go func() {
		for i := 0; i < 2 && a.active.Load(); i++ {
			if err := a.announce(); err != nil {
				a.log.Debug("mdns announce", "error", err)
			}
			select {
			case <-a.done:
				return
			case <-time.After(time.Second):
			}
		}
	}()
}

// Active tells whether this box answers the name now.
func (a *Answerer) Active() bool { return a.active.Load() }

// Close stops answering.
func (a *Answerer) Close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return
	}
	a.closed = true
	a.active.Store(false)
	close(a.done)
	a.srv.Shutdown()
}

// Records is the mdns.Zone: A records for the name while active.
func (a *Answerer) Records(q dns.Question) []dns.RR {
	if !a.active.Load() || !strings.EqualFold(q.Name, a.fqdn) {
		return nil
	}
	if q.Qtype != dns.TypeA && q.Qtype != dns.TypeANY {
		return nil
	}
	return a.records(false)
}

func (a *Answerer) records(flush bool) []dns.RR {
	class := uint16(dns.ClassINET)
	if flush {
		class |= 1 << 15 // cache-flush: this replaces what was cached
	}
	var out []dns.RR
	for _, ip := range a.addrs() {
		if ip4 := ip.To4(); ip4 != nil {
			out = append(out, &dns.A{Hdr: dns.RR_Header{Name: a.fqdn, Rrtype: dns.TypeA, Class: class, Ttl: TTL}, A: ip4})
		}
	}
	return out
}

// announce multicasts the answer unasked.
func (a *Answerer) announce() error {
	rrs := a.records(true)
	if len(rrs) == 0 {
		return nil
	}
	msg := &dns.Msg{MsgHdr: dns.MsgHdr{Response: true, Authoritative: true}, Answer: rrs}
	buf, err := msg.Pack()
	if err != nil {
		return err
	}
	c, err := net.ListenUDP("udp4", nil)
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.WriteToUDP(buf, mdnsGroup)
	return err
}

// InterfaceAddrs is every IPv4 address of an up, non-loopback interface
// that can multicast.
func InterfaceAddrs() []net.IP {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil
	}
	var out []net.IP
	for _, ifc := range ifs {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 || ifc.Flags&net.FlagMulticast == 0 {
			continue
		}
		addrs, _ := ifc.Addrs()
		for _, ad := range addrs {
			if ipn, ok := ad.(*net.IPNet); ok && ipn.IP.To4() != nil {
				out = append(out, ipn.IP.To4())
			}
		}
	}
	return out
}

// slogWriter carries the mdns library's log lines into the box's log at
// debug level (it logs every packet it cannot parse).
type slogWriter struct{ l *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	w.l.Debug("mdns", "msg", strings.TrimSpace(string(p)))
	return len(p), nil
}
