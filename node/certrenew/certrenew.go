// Package certrenew keeps a box's staff HTTPS certificate from lapsing.
//
// The HTTPS certificate lasts pki.HTTPSValidity (800 days: tablets refuse
// longer ones), far less than the store's life. A Renewer holds the pair
// the HTTPS listener serves (GetCertificate reads it on every handshake, so
// a renewed pair is served at once, with no restart and no dropped
// connection) and checks it periodically: when less than a third of its
// lifetime is left (RenewFraction: about 266 days of 800), and the box
// holds the cluster CA key, it issues a fresh certificate for the same
// names with the CA (pki.CA.IssueHTTPSAt), writes it atomically
// (pki.WriteFile) and serves it.
//
// A certificate issued for a LAN address also follows the box to a new
// one (Options.Addrs): when the box has an address its certificate does
// not name (a new router, another DHCP lease) and it holds the CA key,
// it issues the certificate again for its names and its addresses now,
// with the same validity, so it needs no clock.
// The tablets' consoles reach the other boxes by the addresses the status
// gives (httpsAddr, found again by mDNS after a move), and check the
// certificate against the address they dialled.
//
// It never renews from an implausible clock (ClockOK: after a power cut
// a box without a real-time clock boots at its image's date); it tries
// again at the next check.
//
// When the box cannot renew — no CA key on it (`masterorder init` keeps
// the key off the boxes), the CA itself ends before the certificate would
// be extended, a write that fails — Status says why (Problem, Detail), and
// Warn turns true once one of the box's certificates (HTTPS, its cluster
// certificate, or the CA) lapses within WarnBefore: the console's warning.
//
// The cluster (mutual-TLS) certificate is watched, not renewed: it is
// issued for 30 years capped at the CA's end, so it lapses with the CA and
// another certificate from the same CA could not last longer. What can
// lapse there is the CA, which only a new CA (the store formed again)
// replaces; Warn says so a month ahead.
package certrenew

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"masterorder/node/pki"
)

// RenewFraction: a certificate is renewed once less than this part of its
// lifetime (NotAfter - NotBefore) is left.
const RenewFraction = 3 // a third

// WarnBefore: the console warns this long before a certificate of the box
// lapses when it has not been renewed.
const WarnBefore = 30 * 24 * time.Hour

// CheckEvery is how often a running box checks its certificates.
const CheckEvery = time.Hour

// Problems: why a box cannot renew its certificate (Status.Problem).
const (
	ProblemClockSuspect = "clock_suspect"      // the clock is not plausible: not judged, not renewed
	ProblemShared       = "shared_certificate" // HTTPS serves the cluster certificate (no https_cert_file): not renewed here
	ProblemNoCAKey      = "no_ca_key"          // the CA key is not on this box
	ProblemCAExpiring   = "ca_expiring"        // the CA ends before a renewed certificate could last longer
	ProblemRenewFailed  = "renew_failed"       // issuing the new certificate failed
	ProblemWriteFailed  = "write_failed"       // writing the new certificate failed
)

// Status is a box's certificates as the cluster status reports them.
type Status struct {
	// HTTPSNotAfter is when the staff HTTPS certificate lapses (absent
	// without HTTPS).
	HTTPSNotAfter string `json:"httpsNotAfter,omitempty"`
	// NodeNotAfter is when the box's cluster certificate lapses.
	NodeNotAfter string `json:"nodeNotAfter,omitempty"`
	// CANotAfter is when the cluster CA lapses.
	CANotAfter string `json:"caNotAfter,omitempty"`
	// RenewedAt is when this box last renewed its HTTPS certificate in
	// this run (its clock).
	RenewedAt string `json:"renewedAt,omitempty"`
	// Problem is why the box cannot renew (the Problem constants); empty
	// when it can.
	Problem string `json:"problem,omitempty"`
	// Detail is the technical reason, for technicians.
	Detail string `json:"detail,omitempty"`
	// Warn: a certificate of this box lapses within WarnBefore (at
	// LapsesAt) and renewal has not prevented it.
	Warn bool `json:"warn"`
	// LapsesAt is the earliest of the three ends, set with Warn.
	LapsesAt string `json:"lapsesAt,omitempty"`
}

// Options configures a Renewer. The files are those of the box's config
// ([tls]).
type Options struct {
	NodeID string
	// CAFile is the cluster CA certificate; the CA key is looked for
	// beside it (pki.CAKeyFile of its directory).
	CAFile string
	// CertFile and KeyFile are the HTTPS pair. Shared: they are the
	// cluster certificate's (an old config without https_cert_file),
	// which is not replaced by a serverAuth-only certificate.
	CertFile, KeyFile string
	Shared            bool
	// NodeCertFile is the cluster certificate, watched for the warning
	// ("" for none).
	NodeCertFile string
	// Now is the box's wall clock (time.Now when nil); ClockOK says
	// whether it is plausible (always, when nil).
	Now     func() time.Time
	ClockOK func() bool
	// Addrs is the box's LAN addresses now (nil: not followed). Only a
	// certificate that names a LAN address follows them: one for names
	// and loopback only (a lab, a test) is about no address.
	Addrs  func() []net.IP
	Logger *slog.Logger
}

// Renewer holds the served HTTPS pair and renews it.
type Renewer struct {
	o    Options
	pair atomic.Pointer[tls.Certificate]

	mu        sync.Mutex // one check at a time; guards the fields below
	loaded    []byte     // the certificate PEM being served
	renewedAt time.Time
	status    Status
}

// New loads the pair to serve. A certificate whose key does not match (a
// renewal cut between its two files) is issued again at once when the
// box holds the CA key.
func New(o Options) (*Renewer, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.ClockOK == nil {
		o.ClockOK = func() bool { return true }
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	r := &Renewer{o: o}
	certPEM, keyPEM, err := readPair(o.CertFile, o.KeyFile)
	if err != nil {
		return nil, err
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err == nil {
		r.pair.Store(&pair)
		r.loaded = certPEM
		return r, nil
	}
	cert, perr := firstCert(certPEM)
	ca, cerr := r.loadCA()
	if perr != nil || cerr != nil || o.Shared {
		return nil, fmt.Errorf("%s and %s: %w", o.CertFile, o.KeyFile, err)
	}
	o.Logger.Warn("https certificate and key do not match; issuing a new pair", "cert", o.CertFile, "error", err)
	if err := r.renew(ca, cert, o.Now()); err != nil {
		return nil, fmt.Errorf("%s and %s do not match, and issuing a new pair failed: %w", o.CertFile, o.KeyFile, err)
	}
	return r, nil
}

// GetCertificate is the HTTPS listener's tls.Config.GetCertificate: the
// pair current at each handshake.
func (r *Renewer) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return r.pair.Load(), nil
}

// Current is the certificate being served.
func (r *Renewer) Current() *x509.Certificate {
	return r.pair.Load().Leaf
}

// Status is the last check's result.
func (r *Renewer) Status() Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.status
}

// Run checks at once and then every `every` until stop is closed.
func (r *Renewer) Run(stop <-chan struct{}, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		r.Check()
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

// Check takes up a pair written on disk by someone else (init
// --renew-https copied over), renews the served certificate when it is
// due and it can, and returns the status.
func (r *Renewer) Check() Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reloadFromDisk()
	now := r.o.Now()
	st, caEnd := r.check(now)
	// The earliest end among the box's certificates, after any renewal.
	var ends []time.Time
	for _, s := range []string{st.HTTPSNotAfter, st.NodeNotAfter, caEnd} {
		if t, err := time.Parse(time.RFC3339, s); err == nil {
			ends = append(ends, t)
		}
	}
	if st.Problem != ProblemClockSuspect && len(ends) > 0 {
		lapse := ends[0]
		for _, e := range ends[1:] {
			if e.Before(lapse) {
				lapse = e
			}
		}
		if lapse.Sub(now) < WarnBefore {
			st.Warn, st.LapsesAt = true, stamp(lapse)
		}
	}
	st.Detail = shorten(st.Detail)
	r.status = st
	return st
}

// check judges and renews at now; caEnd is the CA's end ("" unread).
func (r *Renewer) check(now time.Time) (st Status, caEnd string) {
	cur := r.pair.Load().Leaf
	st.HTTPSNotAfter = stamp(cur.NotAfter)
	if !r.renewedAt.IsZero() {
		st.RenewedAt = stamp(r.renewedAt)
	}
	if r.o.NodeCertFile != "" {
		if nc, err := readCert(r.o.NodeCertFile); err == nil {
			st.NodeNotAfter = stamp(nc.NotAfter)
		}
	}
	if caCert, err := readCert(r.o.CAFile); err == nil {
		st.CANotAfter = stamp(caCert.NotAfter)
	}
	caEnd = st.CANotAfter
	if hosts := r.movedHosts(cur); hosts != nil && !r.o.Shared {
		// Before the clock is judged: the same validity, another address.
		if err := r.follow(cur, hosts); err != nil && !errors.Is(err, errNoCAKey) {
			st.Problem, st.Detail = problemOf(err), err.Error()
			r.o.Logger.Error("cannot issue the https certificate for this box's new address", "names", hosts, "error", err)
			return st, caEnd
		}
		cur = r.pair.Load().Leaf
	}
	if !r.o.ClockOK() {
		st.Problem, st.Detail = ProblemClockSuspect, "the wall clock ("+stamp(now)+") is not plausible: certificates are not judged or renewed until it is"
		return st, caEnd
	}
	if r.o.Shared {
		st.Problem, st.Detail = ProblemShared, "HTTPS serves the cluster certificate "+r.o.CertFile+" (no tls.https_cert_file): issue an HTTPS pair with `masterorder init --renew-https`"
		return st, caEnd
	}
	ca, err := r.loadCA()
	if err != nil {
		st.Problem, st.Detail = ProblemNoCAKey, err.Error()
		return st, caEnd
	}
	caNotAfter := ca.Certificate().NotAfter
	caSoon := caNotAfter.Sub(now) < WarnBefore
	if !caNotAfter.After(cur.NotAfter) {
		// Renewing cannot help: a new certificate ends with the CA too.
		if due(cur, now) || caSoon {
			st.Problem, st.Detail = ProblemCAExpiring, "the HTTPS certificate ends "+stamp(cur.NotAfter)+" with the cluster CA ("+stamp(caNotAfter)+"): a renewed one could not last longer; a new CA is needed (the store set up again)"
		}
		return st, caEnd
	}
	if caSoon {
		st.Problem, st.Detail = ProblemCAExpiring, "the cluster CA ends "+stamp(caNotAfter)+": a new CA is needed (the store set up again)"
	}
	if !due(cur, now) {
		return st, caEnd
	}
	if err := r.renew(ca, cur, now); err != nil {
		st.Problem, st.Detail = problemOf(err), err.Error()
		r.o.Logger.Error("cannot renew the https certificate", "notAfter", cur.NotAfter, "error", err)
		return st, caEnd
	}
	st.HTTPSNotAfter, st.RenewedAt = stamp(r.pair.Load().Leaf.NotAfter), stamp(r.renewedAt)
	return st, caEnd
}

// due: less than a third of cur's lifetime is left at now.
func due(cur *x509.Certificate, now time.Time) bool {
	life := cur.NotAfter.Sub(cur.NotBefore)
	return cur.NotAfter.Sub(now) < life/RenewFraction
}

// writeError marks a failure to write the new pair.
type writeError struct{ error }

func (e writeError) Unwrap() error { return e.error }

func problemOf(err error) string {
	var we writeError
	if errors.As(err, &we) {
		return ProblemWriteFailed
	}
	return ProblemRenewFailed
}

// movedHosts is the host list cur is issued again for when the box
// moved, nil when it did not: it moved when it has a LAN address
// (Options.Addrs) that cur, which names a LAN address, does not. The
// list keeps cur's names and loopback addresses, takes the box's
// addresses now and drops the ones it left (another device may get them).
func (r *Renewer) movedHosts(cur *x509.Certificate) (hosts []string) {
	if r.o.Addrs == nil || !slices.ContainsFunc(cur.IPAddresses, isLAN) {
		return nil
	}
	now := slices.DeleteFunc(slices.Clone(r.o.Addrs()), func(ip net.IP) bool { return !isLAN(ip) })
	if !slices.ContainsFunc(now, func(ip net.IP) bool { return !slices.ContainsFunc(cur.IPAddresses, ip.Equal) }) {
		return nil
	}
	for _, h := range pki.Hosts(cur) {
		if ip := net.ParseIP(h); ip == nil || !isLAN(ip) {
			hosts = append(hosts, h)
		}
	}
	for _, ip := range now {
		hosts = append(hosts, ip.String())
	}
	return hosts
}

// isLAN: an address a tablet could dial on the store's network (not
// loopback, not unspecified).
func isLAN(ip net.IP) bool { return !ip.IsLoopback() && !ip.IsUnspecified() }

// renew issues a certificate for cur's names, writes the pair and serves
// it. Called with r.mu held (or from New).
func (r *Renewer) renew(ca *pki.CA, cur *x509.Certificate, now time.Time) error {
	certPEM, keyPEM, err := ca.IssueHTTPSAt(r.o.NodeID, pki.Hosts(cur), now)
	if err != nil {
		return err
	}
	pair, err := r.install(certPEM, keyPEM)
	if err != nil {
		return err
	}
	r.renewedAt = now
	r.o.Logger.Info("renewed the https certificate", "was", cur.NotAfter.UTC(), "notAfter", pair.Leaf.NotAfter.UTC(), "names", pki.Hosts(pair.Leaf))
	return nil
}

// errNoCAKey: the CA key is not on this box (loadCA).
var errNoCAKey = errors.New("no CA key")

// follow issues cur again for hosts (the box's addresses now) with cur's
// validity, writes the pair and serves it: no clock is read, so a box
// back from a power cut on a new lease follows before its clock is set.
// Without the CA key it does nothing (errNoCAKey; the status says so
// once the clock is judged). Called with r.mu held.
func (r *Renewer) follow(cur *x509.Certificate, hosts []string) error {
	ca, err := r.loadCA()
	if err != nil {
		return err
	}
	certPEM, keyPEM, err := ca.ReissueHTTPS(r.o.NodeID, hosts, cur)
	if err != nil {
		return err
	}
	pair, err := r.install(certPEM, keyPEM)
	if err != nil {
		return err
	}
	r.o.Logger.Info("issued the https certificate again for this box's addresses now", "was", pki.Hosts(cur), "names", pki.Hosts(pair.Leaf), "notAfter", pair.Leaf.NotAfter.UTC())
	return nil
}

// install writes a new pair (key first: a cut between the two leaves a
// pair New issues again) and serves it.
func (r *Renewer) install(certPEM, keyPEM []byte) (tls.Certificate, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return pair, fmt.Errorf("certrenew: new pair: %w", err)
	}
	if err := writeTLS(r.o.KeyFile, keyPEM); err != nil {
		return pair, writeError{err}
	}
	if err := writeTLS(r.o.CertFile, certPEM); err != nil {
		return pair, writeError{err}
	}
	r.pair.Store(&pair)
	r.loaded = certPEM
	return pair, nil
}

// writeTLS writes one of the pair's files with pki.WriteFile (atomic and
// durable; keys 0600), which takes pki's file names only.
func writeTLS(path string, data []byte) error {
	return pki.WriteFile(filepath.Dir(path), filepath.Base(path), data)
}

// reloadFromDisk serves a pair someone else wrote (a manual renewal) when
// the certificate file changed and the pair is whole.
func (r *Renewer) reloadFromDisk() {
	certPEM, keyPEM, err := readPair(r.o.CertFile, r.o.KeyFile)
	if err != nil || bytes.Equal(certPEM, r.loaded) {
		return
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return // half written, or a cut: the served pair stays
	}
	r.pair.Store(&pair)
	r.loaded = certPEM
	r.o.Logger.Info("serving the https certificate found on disk", "cert", r.o.CertFile, "notAfter", pair.Leaf.NotAfter.UTC())
}

// loadCA loads the CA with its key from beside CAFile.
func (r *Renewer) loadCA() (*pki.CA, error) {
	keyFile := pki.CAKeyFile(filepath.Dir(r.o.CAFile))
	keyPEM, err := os.ReadFile(keyFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("the cluster CA key %s is not on this box: %w", keyFile, errNoCAKey)
	}
	if err != nil {
		return nil, fmt.Errorf("read the cluster CA key: %w", err)
	}
	certPEM, err := os.ReadFile(r.o.CAFile)
	if err != nil {
		return nil, fmt.Errorf("read the cluster CA: %w", err)
	}
	ca, err := pki.LoadCA(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("%s, %s: %w", r.o.CAFile, keyFile, err)
	}
	return ca, nil
}

func readPair(certFile, keyFile string) (certPEM, keyPEM []byte, err error) {
	if certPEM, err = os.ReadFile(certFile); err != nil {
		return nil, nil, err
	}
	if keyPEM, err = os.ReadFile(keyFile); err != nil {
		return nil, nil, err
	}
	return certPEM, keyPEM, nil
}

func readCert(path string) (*x509.Certificate, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return firstCert(b)
}

func firstCert(data []byte) (*x509.Certificate, error) {
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return nil, errors.New("no PEM certificate")
		}
		if block.Type == "CERTIFICATE" {
			return x509.ParseCertificate(block.Bytes)
		}
	}
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// shorten keeps a detail within what the peers' status report carries.
func shorten(s string) string {
	if r := []rune(s); len(r) > 400 {
		return string(r[:400]) + "…"
	}
	return strings.TrimSpace(s)
}
