package certrenew

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"masterorder/node/pki"
)

const day = 24 * time.Hour

// clock is an injectable wall clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
	ok  bool
}

func newClock() *clock { return &clock{now: time.Now(), ok: true} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) OK() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ok
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// box is a box's TLS directory as the wizard writes it.
type box struct {
	dir string
	ca  *pki.CA
}

const id = "b1"

var names = []string{"192.0.2.7", "localhost", "127.0.0.1", "shop.example"}

// newBox writes a CA valid for caFor (0: pki's default), the node's
// cluster certificate, and an HTTPS certificate issued at issuedAt; the
// CA key only when withKey.
func newBox(t *testing.T, caFor time.Duration, issuedAt time.Time, withKey bool) box {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tls")
	ca, err := pki.NewCA("MasterOrder test", caFor)
	if err != nil {
		t.Fatal(err)
	}
	if err := ca.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	if !withKey {
		os.Remove(pki.CAKeyFile(dir))
	}
	cert, key, err := ca.IssueNode(id, []string{"192.0.2.7"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := pki.WriteNodeFiles(dir, id, cert, key); err != nil {
		t.Fatal(err)
	}
	cert, key, err = ca.IssueHTTPSAt(id, names, issuedAt)
	if err != nil {
		t.Fatal(err)
	}
	if err := pki.WriteHTTPSFiles(dir, id, cert, key); err != nil {
		t.Fatal(err)
	}
	return box{dir: dir, ca: ca}
}

func (b box) options(c *clock) Options {
	return Options{NodeID: id, CAFile: pki.CAFile(b.dir), CertFile: pki.HTTPSCertFile(b.dir, id), KeyFile: pki.HTTPSKeyFile(b.dir, id),
		NodeCertFile: pki.NodeCertFile(b.dir, id), Now: c.Now, ClockOK: c.OK, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

func (b box) onDisk(t *testing.T) *x509.Certificate {
	t.Helper()
	c, err := readCert(pki.HTTPSCertFile(b.dir, id))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newRenewer(t *testing.T, o Options) *Renewer {
	t.Helper()
	r, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func sameNames(t *testing.T, a, b *x509.Certificate) {
	t.Helper()
	an, bn := pki.Hosts(a), pki.Hosts(b)
	slices.Sort(an)
	slices.Sort(bn)
	if !slices.Equal(an, bn) || a.Subject.CommonName != b.Subject.CommonName {
		t.Fatalf("names changed: %v %q -> %v %q", an, a.Subject.CommonName, bn, b.Subject.CommonName)
	}
}

// serve runs an HTTPS server the way the box's listener does (GetCertificate
// only) and returns its address.
func serve(t *testing.T, r *Renewer) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: r.GetCertificate, NextProtos: []string{"http/1.1"}}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }),
		ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(tls.NewListener(ln, tc))
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// get is one tablet request: the certificate it saw and whether the
// connection was one from its pool.
func get(t *testing.T, c *http.Client, url string) (notAfter time.Time, reused bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }})
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("tablet request: %v", err)
	}
	defer resp.Body.Close()
	if b, _ := io.ReadAll(resp.Body); string(b) != "ok" {
		t.Fatalf("tablet got %q", b)
	}
	return resp.TLS.PeerCertificates[0].NotAfter, reused
}

// A certificate with 9 days left is renewed for the same names; a tablet
// that trusts only the cluster CA keeps its pooled connection across the
// renewal with no error, and its next handshake sees the new certificate.
func TestRenewalIsInvisibleToATablet(t *testing.T) {
	c := newClock()
	b := newBox(t, 0, c.Now().Add(-pki.HTTPSValidity+10*day), true)
	r := newRenewer(t, b.options(c))
	old := r.Current()
	addr := serve(t, r)

	roots := x509.NewCertPool()
	roots.AddCert(b.ca.Certificate())
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}
	defer tr.CloseIdleConnections()
	tablet := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	url := "https://" + addr + "/"

	if na, _ := get(t, tablet, url); !na.Equal(old.NotAfter) {
		t.Fatalf("first handshake saw %v, want %v", na, old.NotAfter)
	}
	began := time.Now()
	st := r.Check()
	t.Logf("a check that renews took %v (issue, write both files durably, swap)", time.Since(began))
	if st.RenewedAt == "" || st.Problem != "" || st.Warn {
		t.Fatalf("status after renewal: %+v", st)
	}
	cur := r.Current()
	if !cur.NotAfter.After(old.NotAfter.Add(700 * day)) {
		t.Fatalf("renewed certificate ends %v (old %v)", cur.NotAfter, old.NotAfter)
	}
	sameNames(t, old, cur)
	if disk := b.onDisk(t); !disk.Equal(cur) {
		t.Fatal("the renewed certificate is not the one on disk")
	}
	if _, err := tls.LoadX509KeyPair(pki.HTTPSCertFile(b.dir, id), pki.HTTPSKeyFile(b.dir, id)); err != nil {
		t.Fatalf("renewed pair on disk: %v", err)
	}
	if fi, err := os.Stat(pki.HTTPSKeyFile(b.dir, id)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode: %v %v", fi.Mode(), err)
	}

	na, reused := get(t, tablet, url)
	if !reused || !na.Equal(old.NotAfter) {
		t.Fatalf("pooled connection after the renewal: reused %v, certificate %v", reused, na)
	}
	tr.CloseIdleConnections()
	na, reused = get(t, tablet, url)
	if reused || !na.Equal(cur.NotAfter) {
		t.Fatalf("new handshake: reused %v, saw %v, want %v", reused, na, cur.NotAfter)
	}

	// A second check renews nothing more.
	if st := r.Check(); st.RenewedAt != stamp(c.Now()) || !r.Current().Equal(cur) {
		t.Fatalf("second check: %+v", st)
	}
}

func TestNotRenewedBeforeItsTime(t *testing.T) {
	c := newClock()
	b := newBox(t, 0, c.Now().Add(-100*day), true)
	r := newRenewer(t, b.options(c))
	old := r.Current()
	if st := r.Check(); st.RenewedAt != "" || st.Problem != "" || st.Warn || !r.Current().Equal(old) {
		t.Fatalf("a certificate with 700 days left: %+v", st)
	}
	// Past two thirds of its life (533 days after issue) it is renewed.
	c.advance(pki.HTTPSValidity*2/3 - 100*day + day)
	if st := r.Check(); st.RenewedAt == "" || r.Current().Equal(old) {
		t.Fatalf("a certificate past two thirds of its life: %+v", st)
	}
}

// Without the CA key the box cannot renew: the status says so, and warns
// from a month before the end.
func TestNoCAKeyWarnsAMonthAhead(t *testing.T) {
	c := newClock()
	b := newBox(t, 0, c.Now().Add(-pki.HTTPSValidity+60*day), false)
	r := newRenewer(t, b.options(c))
	old := r.Current()
	st := r.Check()
	if st.Problem != ProblemNoCAKey || st.Warn || st.Detail == "" {
		t.Fatalf("59 days left, no CA key: %+v", st)
	}
	c.advance(31 * day)
	st = r.Check()
	if st.Problem != ProblemNoCAKey || !st.Warn || st.LapsesAt != stamp(old.NotAfter) || !r.Current().Equal(old) {
		t.Fatalf("28 days left, no CA key: %+v", st)
	}
	// The key put back: renewed at the next check, the warning gone.
	if err := b.ca.WriteFiles(b.dir); err != nil {
		t.Fatal(err)
	}
	if st = r.Check(); st.Problem != "" || st.Warn || st.RenewedAt == "" {
		t.Fatalf("CA key back: %+v", st)
	}
}

// The CA's end caps the renewed certificate; once the CA has less than a
// month left the status warns, and nothing is issued again.
func TestCAExpiryCapsAndWarns(t *testing.T) {
	c := newClock()
	b := newBox(t, 40*day, c.Now().Add(-pki.HTTPSValidity+10*day), true)
	r := newRenewer(t, b.options(c))
	caEnd := b.ca.Certificate().NotAfter
	st := r.Check()
	if st.RenewedAt == "" || !r.Current().NotAfter.Equal(caEnd) || st.Warn {
		t.Fatalf("renewal under a CA with 40 days left: %+v (ends %v, CA %v)", st, r.Current().NotAfter, caEnd)
	}
	renewed := r.Current()
	c.advance(15 * day)
	st = r.Check()
	if st.Problem != ProblemCAExpiring || !st.Warn || st.LapsesAt != stamp(caEnd) || st.CANotAfter != stamp(caEnd) {
		t.Fatalf("CA with 25 days left: %+v", st)
	}
	if !r.Current().Equal(renewed) || !b.onDisk(t).Equal(renewed) {
		t.Fatal("a certificate that cannot last longer was issued again")
	}
}

// A write that fails leaves the served pair as it was and says so.
func TestWriteFailureWarns(t *testing.T) {
	c := newClock()
	b := newBox(t, 0, c.Now().Add(-pki.HTTPSValidity+10*day), true)
	// The HTTPS pair in a directory of its own, which then goes and a
	// file stands in its place: nothing can be written there (the test
	// runs as root: modes would not stop it).
	httpsDir := filepath.Join(filepath.Dir(b.dir), "https")
	o := b.options(c)
	for _, f := range []string{o.CertFile, o.KeyFile} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := pki.WriteFile(httpsDir, filepath.Base(f), data); err != nil {
			t.Fatal(err)
		}
	}
	o.CertFile, o.KeyFile = pki.HTTPSCertFile(httpsDir, id), pki.HTTPSKeyFile(httpsDir, id)
	r := newRenewer(t, o)
	old := r.Current()
	if err := os.RemoveAll(httpsDir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(httpsDir, []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	st := r.Check()
	if st.Problem != ProblemWriteFailed || !st.Warn || st.Detail == "" || !r.Current().Equal(old) {
		t.Fatalf("write failed: %+v", st)
	}
}

// An implausible clock renews nothing and warns of nothing; the clock
// set right, the renewal follows.
func TestImplausibleClockWaits(t *testing.T) {
	c := newClock()
	b := newBox(t, 0, c.Now().Add(-pki.HTTPSValidity+10*day), true)
	r := newRenewer(t, b.options(c))
	old := r.Current()
	c.mu.Lock()
	c.ok = false
	c.mu.Unlock()
	if st := r.Check(); st.Problem != ProblemClockSuspect || st.Warn || st.RenewedAt != "" || !r.Current().Equal(old) {
		t.Fatalf("implausible clock: %+v", st)
	}
	c.mu.Lock()
	c.ok = true
	c.mu.Unlock()
	if st := r.Check(); st.RenewedAt == "" || r.Current().Equal(old) {
		t.Fatalf("clock set right: %+v", st)
	}
}

// A renewal cut between its two files (the key written, not the
// certificate) is issued again at start on a box with the CA key; without
// it the box refuses to start as before.
func TestMismatchedPairIsReissued(t *testing.T) {
	c := newClock()
	b := newBox(t, 0, c.Now().Add(-10*day), true)
	old := b.onDisk(t)
	_, otherKey, err := b.ca.IssueHTTPSAt(id, names, c.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := pki.WriteFile(b.dir, filepath.Base(pki.HTTPSKeyFile("", id)), otherKey); err != nil {
		t.Fatal(err)
	}
	r := newRenewer(t, b.options(c))
	sameNames(t, old, r.Current())
	if _, err := tls.LoadX509KeyPair(pki.HTTPSCertFile(b.dir, id), pki.HTTPSKeyFile(b.dir, id)); err != nil {
		t.Fatalf("pair on disk after the repair: %v", err)
	}

	os.Remove(pki.CAKeyFile(b.dir))
	if err := pki.WriteFile(b.dir, filepath.Base(pki.HTTPSKeyFile("", id)), otherKey); err != nil {
		t.Fatal(err)
	}
	if _, err := New(b.options(c)); err == nil {
		t.Fatal("a mismatched pair without the CA key was accepted")
	}
}

// A pair written by someone else (init --renew-https, copied over) is
// served from the next check.
func TestPairWrittenOnDiskIsServed(t *testing.T) {
	c := newClock()
	b := newBox(t, 0, c.Now().Add(-10*day), false)
	r := newRenewer(t, b.options(c))
	cert, key, err := b.ca.IssueHTTPS(id, names)
	if err != nil {
		t.Fatal(err)
	}
	if err := pki.WriteHTTPSFiles(b.dir, id, cert, key); err != nil {
		t.Fatal(err)
	}
	r.Check()
	if !bytes.Equal(r.pair.Load().Certificate[0], b.onDisk(t).Raw) {
		t.Fatal("the pair on disk is not served")
	}
}

// An old config whose HTTPS serves the cluster certificate is never
// overwritten with a serverAuth-only certificate.
func TestSharedPairIsNotReplaced(t *testing.T) {
	c := newClock()
	b := newBox(t, 0, c.Now(), true)
	o := b.options(c)
	o.CertFile, o.KeyFile, o.Shared = pki.NodeCertFile(b.dir, id), pki.NodeKeyFile(b.dir, id), true
	r := newRenewer(t, o)
	before, _ := os.ReadFile(o.CertFile)
	c.advance(20 * 365 * day)
	st := r.Check()
	after, _ := os.ReadFile(o.CertFile)
	if st.Problem != ProblemShared || !bytes.Equal(before, after) {
		t.Fatalf("shared pair: %+v", st)
	}
}

func TestRunStops(t *testing.T) {
	c := newClock()
	b := newBox(t, 0, c.Now().Add(-pki.HTTPSValidity+10*day), true)
	r := newRenewer(t, b.options(c))
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { r.Run(stop, time.Hour); close(done) }()
	deadline := time.After(10 * time.Second)
	for r.Status().RenewedAt == "" {
		select {
		case <-deadline:
			t.Fatal("Run did not check at once")
		case <-time.After(10 * time.Millisecond):
		}
	}
	close(stop)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal(errors.New("Run did not stop"))
	}
}

// A box given a new address (a new router) issues its certificate again
// for the new one, with the same validity, keeping its names and
// loopback and dropping the address it left; an address it already
// names changes nothing, and neither does a LAN address for a
// certificate that names none. A tablet trusting only the CA then
// verifies the box at its new address.
func TestCertificateFollowsTheBoxToANewAddress(t *testing.T) {
	c := newClock()
	b := newBox(t, 0, c.Now().Add(-100*day), true)
	addrs := []net.IP{net.ParseIP("192.0.2.7").To4()}
	var mu sync.Mutex
	o := b.options(c)
	o.Addrs = func() []net.IP {
		mu.Lock()
		defer mu.Unlock()
		return addrs
	}
	r := newRenewer(t, o)
	old := r.Current()
	if st := r.Check(); st.RenewedAt != "" || !r.Current().Equal(old) {
		t.Fatalf("at the address it names: %+v", st)
	}

	mu.Lock()
	addrs = []net.IP{net.ParseIP("198.51.100.20").To4()}
	mu.Unlock()
	st := r.Check()
	cur := r.Current()
	if st.Problem != "" || st.RenewedAt != "" || cur.Equal(old) {
		t.Fatalf("after a new lease: %+v", st)
	}
	if !cur.NotBefore.Equal(old.NotBefore) || !cur.NotAfter.Equal(old.NotAfter) || st.HTTPSNotAfter != stamp(old.NotAfter) {
		t.Fatalf("issued again for %v–%v, want the same validity %v–%v", cur.NotBefore, cur.NotAfter, old.NotBefore, old.NotAfter)
	}
	for _, h := range []string{"198.51.100.20", "127.0.0.1", "localhost", "shop.example", id} {
		if err := cur.VerifyHostname(h); err != nil {
			t.Errorf("the new certificate does not name %s: %v", h, err)
		}
	}
	if cur.VerifyHostname("192.0.2.7") == nil {
		t.Error("the new certificate still names the address the box left")
	}
	roots := x509.NewCertPool()
	roots.AddCert(b.ca.Certificate())
	if _, err := cur.Verify(x509.VerifyOptions{Roots: roots, DNSName: "198.51.100.20", KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Errorf("a tablet trusting the CA refuses the box at its new address: %v", err)
	}
	if disk := b.onDisk(t); !disk.Equal(cur) {
		t.Fatal("the new certificate is not the one on disk")
	}
	if _, err := tls.LoadX509KeyPair(pki.HTTPSCertFile(b.dir, id), pki.HTTPSKeyFile(b.dir, id)); err != nil {
		t.Fatalf("the pair on disk: %v", err)
	}
	if r.Check(); !r.Current().Equal(cur) {
		t.Fatal("a second check at the same address issued again")
	}

	// A second address beside it (the Wi-Fi comes up): named too.
	mu.Lock()
	addrs = []net.IP{net.ParseIP("198.51.100.20").To4(), net.ParseIP("203.0.113.5").To4()}
	mu.Unlock()
	r.Check()
	for _, h := range []string{"198.51.100.20", "203.0.113.5"} {
		if err := r.Current().VerifyHostname(h); err != nil {
			t.Errorf("with two addresses: %v", err)
		}
	}

	// A lab's certificate (loopback and names only) is about no address.
	lab := newBox(t, 0, c.Now().Add(-100*day), true)
	cert, key, err := lab.ca.IssueHTTPSAt(id, []string{"localhost", "127.0.0.1"}, c.Now().Add(-100*day))
	if err != nil {
		t.Fatal(err)
	}
	if err := pki.WriteHTTPSFiles(lab.dir, id, cert, key); err != nil {
		t.Fatal(err)
	}
	lo := lab.options(c)
	lo.Addrs = o.Addrs
	lr := newRenewer(t, lo)
	labOld := lr.Current()
	if st := lr.Check(); st.RenewedAt != "" || !lr.Current().Equal(labOld) {
		t.Fatalf("a loopback certificate followed a LAN address: %+v", st)
	}
}

// A box back from a power cut on a new lease, its clock not yet set,
// follows its address all the same (the validity is the old one's), and
// still says its clock is suspect; without the CA key it keeps its
// certificate and says why.
func TestMovedBoxFollowsBeforeItsClockNotWithoutTheKey(t *testing.T) {
	moved := func() []net.IP { return []net.IP{net.ParseIP("198.51.100.20").To4()} }
	c := newClock()
	c.ok = false
	b := newBox(t, 0, c.Now().Add(-100*day), true)
	o := b.options(c)
	o.Addrs = moved
	r := newRenewer(t, o)
	old := r.Current()
	st := r.Check()
	if st.Problem != ProblemClockSuspect || st.RenewedAt != "" || r.Current().VerifyHostname("198.51.100.20") != nil || !r.Current().NotAfter.Equal(old.NotAfter) {
		t.Fatalf("suspect clock: %+v", st)
	}

	c2 := newClock()
	b2 := newBox(t, 0, c2.Now().Add(-100*day), false)
	o2 := b2.options(c2)
	o2.Addrs = moved
	r2 := newRenewer(t, o2)
	old2 := r2.Current()
	if st := r2.Check(); st.Problem != ProblemNoCAKey || st.RenewedAt != "" || !r2.Current().Equal(old2) {
		t.Fatalf("no CA key: %+v", st)
	}
}
