package node

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"sync"

	"github.com/hashicorp/raft"

	"masterorder/node/pki"
)

// A cluster certificate alone is not enough on the raft port: its node id
// (common name) must be a current member, on both ends of a connection,
// and its serial must not be on the replicated deny-list. A removed (or
// stolen) box is thus shut out the moment the removal commits, and its
// certificate stays refused even if its id is given to a replacement box.

// denyKeyPrefix holds denycert:{serial hex} → node id for certificates
// of removed members.
const denyKeyPrefix = "denycert:"

var (
	errNotMember  = errors.New("peer certificate names no current member")
	errDeniedCert = errors.New("peer certificate was revoked (a removed member's)")
)

// peerSerials remembers the certificate serials each member presented, so
// that removing a member can deny exactly its certificates.
type peerSerials struct {
	mu   sync.Mutex
	byID map[string]map[string]bool
}

func (p *peerSerials) saw(id, serial string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.byID == nil {
		p.byID = map[string]map[string]bool{}
	}
	if p.byID[id] == nil {
		p.byID[id] = map[string]bool{}
	}
	if len(p.byID[id]) < 16 {
		p.byID[id][serial] = true
	}
}

func (p *peerSerials) of(id string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for s := range p.byID[id] {
		out = append(out, s)
	}
	return out
}

// withPeerCheck adds the membership and deny-list check to a mutual-TLS
// config (server or client side); the chain was verified before.
func (n *Node) withPeerCheck(cfg *tls.Config) *tls.Config {
	cfg = cfg.Clone()
	prev := cfg.VerifyConnection
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		if prev != nil {
			if err := prev(cs); err != nil {
				return err
			}
		}
		return n.checkPeer(cs)
	}
	return cfg
}

func (n *Node) checkPeer(cs tls.ConnectionState) error {
	id := pki.PeerNodeID(cs)
	if id == "" || len(cs.PeerCertificates) == 0 {
		return errNotMember
	}
	serial := cs.PeerCertificates[0].SerialNumber.Text(16)
	if _, denied, err := n.kv.Get(denyKeyPrefix + serial); err == nil && denied {
		return fmt.Errorf("%w: %s serial %s", errDeniedCert, id, serial)
	}
	if !n.isMember(id) {
		return fmt.Errorf("%w: %q", errNotMember, id)
	}
	n.serials.saw(id, serial)
	return nil
}

// isMember judges by the Raft configuration once there is one; before
// (first start, or a joining box not yet given the cluster's state) by
// the configured peers.
func (n *Node) isMember(id string) bool {
	if r := n.raftRef.Load(); r != nil {
		if f := r.GetConfiguration(); f.Error() == nil && len(f.Configuration().Servers) > 0 {
			for _, s := range f.Configuration().Servers {
				if s.ID == raft.ServerID(id) {
					return true
				}
			}
			return false
		}
	}
	for _, p := range n.cfg.Peers {
		if p.ID == id {
			return true
		}
	}
	return false
}

// denyRemoved puts the certificates a removed member presented on the
// deny-list (replicated). Best effort: membership alone refuses it already.
func (n *Node) denyRemoved(ctx context.Context, id string) {
	for _, serial := range n.serials.of(id) {
		if err := n.kv.Put(ctx, denyKeyPrefix+serial, []byte(id), 0); err != nil {
			n.log.Warn("deny a removed member's certificate", "member", id, "serial", serial, "error", err)
		}
	}
}
