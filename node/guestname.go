package node

import (
	"net"
	"time"

	"github.com/hashicorp/raft"

	"masterorder/node/lanname"
)

// The store's one name for guests (mdns_name): every member listens, the
// Raft leader answers. A leader is exactly one box at a time, and a new
// one is elected within the election timeout when it dies, which is the
// failover the name needs; a box without a quorum answers nothing, as
// it could take no order anyway.

// startGuestName starts answering mdns_name when it is set.
func (n *Node) startGuestName() error {
	if n.cfg.MDNSName == "" {
		return nil
	}
	a, err := lanname.Start(n.cfg.MDNSName, n.nameAddrs, n.log)
	if err != nil {
		return err
	}
	n.guestName = a
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		defer a.Close()
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			a.SetActive(n.isLeader())
			select {
			case <-n.ctx.Done():
				a.SetActive(false)
				return
			case <-t.C:
			}
		}
	}()
	return nil
}

func (n *Node) isLeader() bool {
	r := n.raftRef.Load()
	return r != nil && r.State() == raft.Leader
}

// nameAddrs is the address guests reach this box at: every LAN address
// the box has now (it listens on all of them: bindAddr), so the name
// follows a new DHCP lease; a loopback http_addr (tests, the demo) is
// answered as configured.
func (n *Node) nameAddrs() []net.IP {
	host, _, err := net.SplitHostPort(n.cfg.HTTPAddr)
	if ip := net.ParseIP(host); err == nil && ip != nil && ip.IsLoopback() {
		return []net.IP{ip}
	}
	return lanname.InterfaceAddrs()
}

// AnswersGuestName tells whether this box answers the guest name now.
func (n *Node) AnswersGuestName() bool {
	return n.guestName != nil && n.guestName.Active()
}

// GuestNameURL is http://<mdns_name>/ (with http_addr's port when it is
// not 80), or "" when the store has no mDNS name: the guest address the
// QR codes use when public_url is unset.
func (n *Node) GuestNameURL() string {
	if n.cfg.MDNSName == "" {
		return ""
	}
	host := n.cfg.MDNSName
	if _, port, err := net.SplitHostPort(n.cfg.HTTPAddr); err == nil && port != "80" {
		host = net.JoinHostPort(host, port)
	}
	return "http://" + host
}

// StaffNameBase is https://<mdns_name> (with https_addr's port when it is
// not 443), or "" without a name or HTTPS: where staff and kitchen
// tablets reach the store whatever addresses the boxes have (the leader
// answers the name; every box's HTTPS certificate names it).
func (n *Node) StaffNameBase() string {
	if n.cfg.MDNSName == "" || n.cfg.HTTPSAddr == "" {
		return ""
	}
	host := n.cfg.MDNSName
	if _, port, err := net.SplitHostPort(n.cfg.HTTPSAddr); err == nil && port != "443" {
		host = net.JoinHostPort(host, port)
	}
	return "https://" + host
}
