package setup

import (
	"fmt"
	"io"
	"log"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/mdns"
)

// ServiceType is the DNS-SD service every box announces.
const ServiceType = "_masterorder._tcp"

// Announcement is what a box says about itself on the LAN. Nothing in it
// is secret: a random id, its mode, its version and its setup key's
// fingerprint (which lets a claimer pin the TLS channel).
type Announcement struct {
	ID          string
	State       Mode // setup or member (claimed boxes announce "claimed")
	Version     string
	Fingerprint string
	Port        int      // the setup page / member HTTP port
	IPs         []net.IP // nil: this machine's addresses
	// Member is what a member adds (its node id, cluster tag and ports:
	// node/peerfind.TXT), by which the other members find it at a new
	// address.
	Member []string
}

// TXT is the announcement's TXT record.
func (a Announcement) TXT() []string {
	return append([]string{"id=" + a.ID, "state=" + string(a.State), "version=" + a.Version, "fp=" + a.Fingerprint}, a.Member...)
}

// Announcer answers mDNS queries for one box until Close.
type Announcer struct {
	updating sync.Mutex // one Update at a time: the rewatch never undoes a newer one
	mu       sync.Mutex
	shutdown func()       // stops the running server (nil: none)
	last     Announcement // what was asked for (IPs nil: this machine's)
	ips      string       // the addresses the running server announces
	stop     chan struct{}

	localIPs func() []net.IP                 // LocalIPs; a test's own list
	serve    func(mdns.Zone) (func(), error) // serveZone; a test records the zones
	// multicast tells whether the mDNS group can be reached now (a
	// route to it): multicastRoute; a test's own.
	multicast func() bool
}

func (x *Announcer) multicastReady() bool { return x.multicast == nil || x.multicast() }

// multicastRoute tells whether this machine has a route to the mDNS
// group (connecting a UDP socket looks the route up; nothing is sent).
func multicastRoute() bool {
	c, err := net.DialUDP("udp4", nil, &net.UDPAddr{IP: net.IPv4(224, 0, 0, 251), Port: 5353})
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// rewatchEvery is how often an announcement of this machine's addresses
// looks again at them: a box powered on before its cable was plugged in,
// or whose DHCP lease changed, is announced on its new address.
const rewatchEvery = 5 * time.Second

// quietLog drops hashicorp/mdns's own log lines (a missing IPv6 stack is
// not news).
var quietLog = log.New(io.Discard, "", 0)

// Announce starts answering for a on every multicast interface.
// hashicorp/mdns binds 5353 with SO_REUSEADDR, so it coexists with an
// avahi-daemon on the same host.
//
// The Announcer it returns is never nil: when a.IPs is nil it keeps
// watching this machine's addresses and announces again when they change,
// so an error here (no address yet) is worth a log line, not giving up.
func Announce(a Announcement) (*Announcer, error) {
	return announce(a, rewatchEvery, LocalIPs, serveZone, multicastRoute)
}

// announce is Announce with the interval, the address lister, the
// server start and the multicast route check given (a test replaces
// them; production uses the above).
func announce(a Announcement, every time.Duration, localIPs func() []net.IP, serve func(mdns.Zone) (func(), error), multicast func() bool) (*Announcer, error) {
	x := &Announcer{stop: make(chan struct{}), localIPs: localIPs, serve: serve, multicast: multicast}
	err := x.Update(a)
	go x.rewatch(x.stop, every)
	return x, err
}

// serveZone answers for zone on every multicast interface until the
// returned func is called.
func serveZone(zone mdns.Zone) (func(), error) {
	s, err := mdns.NewServer(&mdns.Config{Zone: zone, Logger: quietLog})
	if err != nil {
		return nil, err
	}
	return func() { s.Shutdown() }, nil
}

// rewatch announces again when this machine's addresses change.
func (x *Announcer) rewatch(stop <-chan struct{}, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		x.updating.Lock()
		x.mu.Lock()
		a, ips, closed := x.last, x.ips, x.stop == nil
		x.mu.Unlock()
		if !closed && a.IPs == nil && ipsKey(x.localIPs()) != ips {
			_ = x.update(a) // no address yet: the next tick tries again
		}
		x.updating.Unlock()
	}
}

func ipsKey(ips []net.IP) string {
	var b strings.Builder
	for _, ip := range ips {
		b.WriteString(ip.String())
		b.WriteByte(',')
	}
	return b.String()
}

// Update replaces the announcement (setup → member).
func (x *Announcer) Update(a Announcement) error {
	x.updating.Lock()
	defer x.updating.Unlock()
	return x.update(a)
}

// update is Update with x.updating held.
func (x *Announcer) update(a Announcement) error {
	x.mu.Lock()
	x.last = a
	x.mu.Unlock()
	ips := a.IPs
	if ips == nil {
		ips = x.localIPs()
	}
	if len(ips) == 0 {
		return fmt.Errorf("mdns: no address to announce")
	}
	svc, err := mdns.NewMDNSService("masterorder-"+strings.ToLower(ShortCode(a.ID)), ServiceType, "local.",
		"masterorder-"+a.ID+".local.", a.Port, ips, a.TXT())
	if err != nil {
		return fmt.Errorf("mdns: %w", err)
	}
	// Looked at before the server starts: a route that comes while it
	// starts must not count for a server that could not use it.
	ready := a.IPs != nil || x.multicastReady()
	shutdown, err := x.serve(svc)
	if err != nil {
		return fmt.Errorf("mdns: %w", err)
	}
	x.mu.Lock()
	if x.stop == nil { // closed meanwhile
		x.mu.Unlock()
		shutdown()
		return nil
	}
	old := x.shutdown
	x.shutdown = shutdown
	x.ips = ipsKey(ips)
	if !ready {
		// A new lease comes as an address first and routes after: a
		// server started in between listens on IPv6 only (the IPv4 group
		// cannot be joined without a route), and would never be started
		// again for the same addresses. Forget them: the next look
		// serves again, until the group can be reached.
		x.ips = ""
	}
	x.mu.Unlock()
	if old != nil {
		old()
	}
	return nil
}

// Close stops answering.
func (x *Announcer) Close() {
	if x == nil {
		return
	}
	x.mu.Lock()
	shutdown := x.shutdown
	x.shutdown = nil
	x.last = Announcement{}
	if x.stop != nil {
		close(x.stop)
		x.stop = nil
	}
	x.mu.Unlock()
	if shutdown != nil {
		shutdown()
	}
}

// LocalIPs are this machine's IPv4 addresses on interfaces that are up,
// leaving out container and VM bridges and link-local addresses (the
// other boxes could not reach them); loopback only when there is nothing
// else (a test's namespace).
func LocalIPs() []net.IP {
	var out, loop []net.IP
	ifs, _ := net.Interfaces()
	for _, ifc := range ifs {
		if ifc.Flags&net.FlagUp == 0 || virtualInterface(ifc.Name) {
			continue
		}
		addrs, _ := ifc.Addrs()
		for _, a := range addrs {
			ipn, ok := a.(*net.IPNet)
			if !ok || ipn.IP.To4() == nil {
				continue
			}
			if ipn.IP.IsLoopback() {
				loop = append(loop, ipn.IP.To4())
				continue
			}
			if ipn.IP.IsLinkLocalUnicast() {
				continue
			}
			out = append(out, ipn.IP.To4())
		}
	}
	if len(out) == 0 {
		return loop
	}
	return out
}

func virtualInterface(name string) bool {
	for _, p := range []string{"docker", "br-", "veth", "virbr", "lxc", "cni", "flannel", "tun", "wg"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}
