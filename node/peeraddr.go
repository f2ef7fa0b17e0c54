package node

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"masterorder/node/peerfind"
	"masterorder/node/pki"
)

// Boxes are found by their id, not by the address DHCP gave them at
// setup. The configuration (peers, the Raft configuration) keeps each
// member's address from the day it joined: it is the first guess and
// the name of the member's connections, never where this box must dial.
// Where member X is now is the peer book's answer: the address X last
// announced by mDNS (node/peerfind: members announce their node id and
// cluster), else the configured one. A failed dial, a probe without an
// answer, asks the LAN again, at most once per peerLookupGap however many
// dials fail, so a dead box never makes an mDNS storm. The mutual-TLS
// handshake then proves that whoever answers there is X (expectPeer).

const (
	// peerLookupGap is the least time between two mDNS questions of one
	// box: a dead member is asked for every 2 s at most.
	peerLookupGap = 2 * time.Second
	// peerLookupWait is how long one question collects answers.
	peerLookupWait = time.Second
)

// errNoAddr: no configuration knows a member (the Raft transport then
// dials the address in the Raft configuration).
var errNoAddr = errors.New("no address")

// peerBook is where each member is now, as far as this box knows.
type peerBook struct {
	mu   sync.Mutex
	seen map[string]net.IP // node id → address it last announced
	want bool              // a dial failed since the last question
	wake chan struct{}
	// browse asks the LAN for the cluster's members; nil: no lookups
	// (no cluster tag known, or a test's loopback cluster).
	browse  func(ctx context.Context) (map[string]peerfind.Member, error)
	queries int // questions asked (tests and the status's details)
	// onFound, if set, is told of each address that changed (logs).
	onFound func(id string, old, now net.IP)
}

func newPeerBook(browse func(ctx context.Context) (map[string]peerfind.Member, error)) *peerBook {
	return &peerBook{seen: map[string]net.IP{}, wake: make(chan struct{}, 1), browse: browse}
}

// current is where to dial member id whose configured address is addr
// (HOST:PORT): the port is the configured one, the host the address id
// last announced, else the configured host. A loopback address (a test's
// cluster on one machine) is never looked up.
func (b *peerBook) current(id, addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || b == nil || isLoopbackHost(host) {
		return addr
	}
	b.mu.Lock()
	ip := b.seen[id]
	b.mu.Unlock()
	if ip == nil {
		return addr
	}
	return net.JoinHostPort(ip.String(), port)
}

// miss says a dial to id failed (or it did not answer a probe): ask the
// LAN again, soon, once for every member.
func (b *peerBook) miss(id string) {
	if b == nil || b.browse == nil {
		return
	}
	b.mu.Lock()
	b.want = true
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// run asks the LAN whenever a miss was reported, at most once per gap,
// until ctx ends.
func (b *peerBook) run(ctx context.Context, gap time.Duration) {
	if b.browse == nil {
		return
	}
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-b.wake:
		}
		if wait := gap - time.Since(last); wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
		}
		b.mu.Lock()
		want := b.want
		b.want = false
		b.mu.Unlock()
		if !want {
			continue
		}
		last = time.Now()
		found, _ := b.browse(ctx)
		b.learn(found)
	}
}

// learn keeps the addresses found.
func (b *peerBook) learn(found map[string]peerfind.Member) {
	b.mu.Lock()
	b.queries++
	var changed [][3]any
	for id, m := range found {
		if old := b.seen[id]; !old.Equal(m.IP) {
			changed = append(changed, [3]any{id, old, m.IP})
			b.seen[id] = m.IP
		}
	}
	onFound := b.onFound
	b.mu.Unlock()
	if onFound != nil {
		for _, c := range changed {
			onFound(c[0].(string), c[1].(net.IP), c[2].(net.IP))
		}
	}
}

func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// bindAddr is where this box listens for a configured HOST:PORT: every
// address of the box on that port, so that a new DHCP lease (or a box
// started on an address that is not the one in its config) changes
// nothing; a loopback host (the demo, tests: several boxes on one
// machine) stays as configured, never open to the LAN.
func bindAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || isLoopbackHost(host) {
		return addr
	}
	return net.JoinHostPort("", port)
}

// configuredRaftAddr is member id's address in the configured peers,
// else in the Raft configuration ("" when unknown).
func (n *Node) configuredRaftAddr(id string) string {
	for _, p := range n.cfg.Peers {
		if p.ID == id {
			return p.RaftAddr
		}
	}
	if r := n.raftRef.Load(); r != nil {
		if f := r.GetConfiguration(); f.Error() == nil {
			for _, s := range f.Configuration().Servers {
				if string(s.ID) == id {
					return string(s.Address)
				}
			}
		}
	}
	return ""
}

// memberByRaftAddr is the id of the member whose raft address in the
// configuration (peers or Raft's) is addr ("" when none).
func (n *Node) memberByRaftAddr(addr string) string {
	for _, p := range n.cfg.Peers {
		if p.RaftAddr == addr {
			return p.ID
		}
	}
	if r := n.raftRef.Load(); r != nil {
		if f := r.GetConfiguration(); f.Error() == nil {
			for _, s := range f.Configuration().Servers {
				if string(s.Address) == addr {
					return string(s.ID)
				}
			}
		}
	}
	return ""
}

// dialTarget is where to dial member id's raft port now: its dial_addr
// (a test's proxy) when set, else the peer book's answer.
func (n *Node) dialTarget(id, addr string) string {
	for _, p := range n.cfg.Peers {
		if p.ID == id && p.DialAddr != "" {
			return p.DialAddr
		}
	}
	return n.book.current(id, addr)
}

// peerAddress is the address the Raft transport dials for member id:
// "id@HOST:PORT", so the stream layer checks that the box that answers
// there holds id's certificate (tlsnet.StreamLayer.Dial).
type peerAddress struct{ n *Node }

func (a peerAddress) ServerAddr(id raft.ServerID) (raft.ServerAddress, error) {
	addr := a.n.configuredRaftAddr(string(id))
	if addr == "" {
		return "", errNoAddr
	}
	return raft.ServerAddress(string(id) + "@" + a.n.dialTarget(string(id), addr)), nil
}

// missedStream tells the peer book of a failed Raft dial.
type missedStream struct {
	raft.StreamLayer
	book *peerBook
}

func (s missedStream) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	c, err := s.StreamLayer.Dial(address, timeout)
	if err != nil {
		if id, _, ok := strings.Cut(string(address), "@"); ok {
			s.book.miss(id)
		}
	}
	return c, err
}

// peerBrowser is how this box asks the LAN for its cluster's members:
// Options.FindPeers when a test gives one, else mDNS for the members
// announcing this cluster's tag (nil without a CA file: no lookups).
func (n *Node) peerBrowser() func(ctx context.Context) (map[string]peerfind.Member, error) {
	if n.opts.FindPeers != nil {
		return n.opts.FindPeers
	}
	if n.cfg.TLS.CAFile == "" {
		return nil
	}
	caPEM, err := os.ReadFile(n.cfg.TLS.CAFile)
	if err != nil {
		return nil
	}
	tag := peerfind.ClusterTag(caPEM)
	if tag == "" {
		return nil
	}
	return func(ctx context.Context) (map[string]peerfind.Member, error) {
		return peerfind.Browse(ctx, tag, peerLookupWait)
	}
}

// errWrongPeer: the box that answered at a member's address holds
// another member's certificate (two boxes swapped addresses).
var errWrongPeer = errors.New("another member answers at this address")

// expectPeer checks that a handshake's peer certificate names id.
func expectPeer(cs tls.ConnectionState, id string) error {
	if got := pki.PeerNodeID(cs); id != "" && got != id {
		return fmt.Errorf("%w: dialled %s, %q answered", errWrongPeer, id, got)
	}
	return nil
}

// renewPeerClients starts the internal channel's connection pools afresh:
// a member moved (or this box did), and a pooled connection to where it
// was would carry the next forward into a silence until its ping times
// out. Requests in flight on the old pools finish or fail there.
func (n *Node) renewPeerClients() {
	if old := n.peerHTTP.Swap(n.newPeerClient(n.countedDial)); old != nil {
		old.CloseIdleConnections()
	}
	if old := n.diskHTTP.Swap(n.newPeerClient(n.dialInternal)); old != nil {
		old.CloseIdleConnections()
	}
}

// localAddrs watches this box's own addresses: when DHCP changed them,
// the connections to the others left from the old address are dead and
// the others have likely moved too (a new router): renew the pools and
// ask the LAN where everyone is.
type localAddrs struct{ last string }

func (l *localAddrs) changed(now []net.IP) bool {
	var b strings.Builder
	for _, ip := range now {
		b.WriteString(ip.String())
		b.WriteByte(',')
	}
	key := b.String()
	if l.last == key {
		return false
	}
	first := l.last == ""
	l.last = key
	return !first
}

// movedMemberOrigin lets a page loaded from a member's current address
// (found after a new lease: not in any config) call this box.
func (n *Node) movedMemberOrigin(origin string) bool {
	r := n.raftRef.Load()
	if r == nil {
		return false
	}
	f := r.GetConfiguration()
	if f.Error() != nil {
		return false
	}
	for _, s := range f.Configuration().Servers {
		id := string(s.ID)
		if a := n.MemberHTTP(id); a != "" && origin == "http://"+a {
			return true
		}
		if a := n.memberHTTPS(id); a != "" && origin == "https://"+a {
			return true
		}
	}
	return false
}
