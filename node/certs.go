package node

import (
	"masterorder/node/certrenew"
)

// The staff HTTPS certificate renews itself from the cluster CA before it
// lapses (node/certrenew): the listener's GetCertificate serves the
// renewer's current pair, so tablets see the new certificate at their
// next handshake, and the status reports, per member, when its
// certificates lapse and why it cannot renew (the console's warning a
// month ahead).

// newCertRenewer loads the HTTPS pair the listener serves: https_cert_file
// (or, in an old config without one, the cluster certificate, which is
// watched but never replaced).
func (n *Node) newCertRenewer() (*certrenew.Renewer, error) {
	t := n.cfg.TLS
	certFile, keyFile, shared := t.HTTPSCertFile, t.HTTPSKeyFile, false
	if certFile == "" {
		certFile, keyFile, shared = t.CertFile, t.KeyFile, true
	}
	return certrenew.New(certrenew.Options{
		NodeID:       n.cfg.NodeID,
		CAFile:       t.CAFile,
		CertFile:     certFile,
		KeyFile:      keyFile,
		Shared:       shared,
		NodeCertFile: t.CertFile,
		Now:          n.opts.WallClock,
		// Only from a clock some source vouched for (NTP, a manager, a
		// member's): a box that booted at its image's date does not issue
		// from it (node/clock.go; the status's clockSuspect).
		ClockOK: func() bool { return n.ClockStatus().Trusted },
		// The addresses it is reached at now: a certificate issued for the
		// box's address at setup follows it to a new DHCP lease.
		Addrs:  n.nameAddrs,
		Logger: n.log,
	})
}

// runCertRenewer checks the certificates now and every
// certrenew.CheckEvery (Options.CertCheckEvery) until the node stops.
func (n *Node) runCertRenewer(r *certrenew.Renewer) {
	n.certs.Store(r)
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		every := n.opts.CertCheckEvery
		if every <= 0 {
			every = certrenew.CheckEvery
		}
		r.Run(n.ctx.Done(), every)
	}()
}

// CertStatus is this box's certificates as its renewer last judged them
// (nil without HTTPS).
func (n *Node) CertStatus() *certrenew.Status {
	r := n.certs.Load()
	if r == nil {
		return nil
	}
	st := r.Status()
	if st.HTTPSNotAfter == "" {
		return nil // not checked yet
	}
	return &st
}

// PeerCerts is a member's certificates as it last reported them (nil:
// never, or a box without HTTPS or of an older version).
func (n *Node) PeerCerts(id string) *certrenew.Status {
	if id == n.cfg.NodeID {
		return n.CertStatus()
	}
	n.disk.mu.Lock()
	defer n.disk.mu.Unlock()
	return n.disk.peers[id].Certificates
}
