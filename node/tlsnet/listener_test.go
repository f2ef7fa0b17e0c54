package tlsnet_test

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"masterorder/node/pki"
	"masterorder/node/tlsnet"
)

type certs struct {
	server, client *tls.Config
}

func newCA(t *testing.T, name string) *pki.CA {
	t.Helper()
	ca, err := pki.NewCA(name, 0)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// peersAndRogue is two nodes, a and b, of one cluster CA and a node of
// another CA.
func peersAndRogue(t *testing.T) (a, b, rogue certs) {
	t.Helper()
	ca := newCA(t, "cluster")
	return nodeTLS(t, ca, "a"), nodeTLS(t, ca, "b"), nodeTLS(t, newCA(t, "other"), "x")
}

// listenLoopback listens on a free loopback port.
func listenLoopback(t *testing.T) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func nodeTLS(t *testing.T, ca *pki.CA, id string) certs {
	t.Helper()
	c, k, err := ca.IssueNode(id, []string{"127.0.0.1"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	s, cl, err := pki.MutualTLSConfig(ca.CertPEM(), c, k)
	if err != nil {
		t.Fatal(err)
	}
	return certs{s, cl}
}

// rejects records what the listener closed.
type rejects struct {
	mu   sync.Mutex
	errs []error
}

func (r *rejects) handler(_ net.Addr, err error) {
	r.mu.Lock()
	r.errs = append(r.errs, err)
	r.mu.Unlock()
}

func (r *rejects) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.errs)
}

func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// assertClosedByPeer reads until the peer closes the connection.
func assertClosedByPeer(t *testing.T, c net.Conn, within time.Duration) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(within))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("connection still open after %v", within)
	}
}

// acceptAll collects whatever the listener hands on.
func acceptAll(ln net.Listener) (<-chan net.Conn, <-chan struct{}) {
	ch := make(chan net.Conn, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			ch <- c
		}
	}()
	return ch, done
}

func TestListenerHandsOnOnlyVerifiedPeers(t *testing.T) {
	a, b, rogue := peersAndRogue(t)

	inner := listenLoopback(t)
	var rj rejects
	ln := tlsnet.NewMTLSListener(inner, a.server, tlsnet.WithHandshakeTimeout(300*time.Millisecond), tlsnet.WithRejectHandler(rj.handler))
	accepted, loopDone := acceptAll(ln)
	addr := ln.Addr().String()

	// A silent client that never starts a handshake is holding a slot.
	silent, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()

	// Garbage over plain TCP.
	garbage, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	garbage.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n\x00\x01\x02"))
	assertClosedByPeer(t, garbage, 2*time.Second)
	garbage.Close()

	// TLS without a client certificate.
	noCert := b.client.Clone()
	noCert.Certificates = nil
	if err := tlsExchange(addr, noCert); err == nil {
		t.Error("TLS client without a certificate was served")
	}
	// TLS with a certificate of another CA (and the wrong CA for the server).
	if err := tlsExchange(addr, rogue.client); err == nil {
		t.Error("client of another CA was served")
	}

	// A cluster peer gets through even while the silent client waits.
	good, err := tls.Dial("tcp", addr, b.client)
	if err != nil {
		t.Fatalf("cluster peer: %v", err)
	}
	defer good.Close()
	select {
	case c := <-accepted:
		tc, ok := c.(*tls.Conn)
		if !ok {
			t.Fatalf("accepted %T, want *tls.Conn", c)
		}
		if got := pki.PeerNodeID(tc.ConnectionState()); got != "b" {
			t.Errorf("peer node id %q, want b", got)
		}
		c.Close()
	case <-time.After(2 * time.Second):
		t.Fatal("cluster peer not accepted")
	}

	// The silent client is closed after the handshake timeout.
	assertClosedByPeer(t, silent, 2*time.Second)

	select {
	case c := <-accepted:
		t.Fatalf("a rejected client reached Accept: %v", c.RemoteAddr())
	default:
	}
	waitFor(t, "four rejections", 2*time.Second, func() bool { return rj.count() >= 4 })

	ln.Close()
	<-loopDone
	if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept after Close: %v, want net.ErrClosed", err)
	}
}

// tlsExchange completes a handshake, writes a byte and reads, returning nil
// if the server accepted the connection (a read timeout, EOF, or data) and
// the error if it refused it. In TLS 1.3 a client learns that its
// certificate was refused only when it reads.
func tlsExchange(addr string, cfg *tls.Config) error {
	d := &net.Dialer{Timeout: 2 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", addr, cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte{1}); err != nil {
		return err
	}
	_, err = c.Read(make([]byte, 1))
	var ne net.Error
	if err == nil || errors.Is(err, io.EOF) || errors.As(err, &ne) && ne.Timeout() {
		return nil
	}
	return err
}

func TestListenerBoundsHandshakesPerHost(t *testing.T) {
	ca := newCA(t, "cluster")
	a := nodeTLS(t, ca, "a")
	inner := listenLoopback(t)
	var rj rejects
	ln := tlsnet.NewMTLSListener(inner, a.server,
		tlsnet.WithHandshakeTimeout(5*time.Second),
		tlsnet.WithMaxPendingHandshakes(100, 2),
		tlsnet.WithRejectHandler(rj.handler))
	defer ln.Close()
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range 3 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	// The third silent connection from the same host is dropped at once.
	waitFor(t, "over-limit rejection", 2*time.Second, func() bool { return rj.count() == 1 })
	rj.mu.Lock()
	err := rj.errs[0]
	rj.mu.Unlock()
	if !errors.Is(err, tlsnet.ErrTooManyHandshakes) {
		t.Errorf("rejection %v, want ErrTooManyHandshakes", err)
	}
}

func TestMTLSHTTP(t *testing.T) {
	a, b, rogue := peersAndRogue(t)

	inner := listenLoopback(t)
	ln := tlsnet.NewMTLSListener(inner, a.server)
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.TLS == nil {
				http.Error(w, "no tls", 500)
				return
			}
			io.WriteString(w, "hello "+pki.PeerNodeID(*r.TLS))
		}),
		ReadHeaderTimeout: 5 * time.Second,
	}
	go srv.Serve(ln)
	defer srv.Close()
	url := "https://" + ln.Addr().String() + "/internal/ping"

	resp, err := tlsnet.HTTPClient(b.client).Get(url)
	if err != nil {
		t.Fatalf("cluster client: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "hello b" {
		t.Fatalf("got %d %q", resp.StatusCode, body)
	}

	noCert := b.client.Clone()
	noCert.Certificates = nil
	if resp, err := tlsnet.HTTPClient(noCert).Get(url); err == nil {
		resp.Body.Close()
		t.Error("client without certificate was served")
	}
	if resp, err := tlsnet.HTTPClient(rogue.client).Get(url); err == nil {
		resp.Body.Close()
		t.Error("client of another CA was served")
	}
	plain := &http.Client{Timeout: 2 * time.Second}
	if resp, err := plain.Get("http://" + ln.Addr().String() + "/internal/ping"); err == nil {
		resp.Body.Close()
		t.Errorf("plain HTTP was answered with %d", resp.StatusCode)
	}
	// A Raft-speaking client on the HTTP port fails its handshake.
	raftClient := b.client.Clone()
	raftClient.NextProtos = []string{tlsnet.RaftALPN}
	if err := tlsExchange(ln.Addr().String(), raftClient); err == nil || !strings.Contains(err.Error(), "protocol") {
		t.Errorf("raft ALPN on the HTTP port: %v", err)
	}
}

func TestMTLSListenerFailsClosed(t *testing.T) {
	ca := newCA(t, "cluster")
	a := nodeTLS(t, ca, "a")
	b := nodeTLS(t, ca, "b")
	// A careless config: no client auth, no ClientCAs.
	open := a.server.Clone()
	open.ClientAuth = tls.NoClientCert
	open.ClientCAs = nil
	inner := listenLoopback(t)
	ln := tlsnet.NewMTLSListener(inner, open)
	defer ln.Close()
	accepted, _ := acceptAll(ln)
	noCert := b.client.Clone()
	noCert.Certificates = nil
	if err := tlsExchange(ln.Addr().String(), noCert); err == nil {
		t.Error("client without certificate served")
	}
	if err := tlsExchange(ln.Addr().String(), b.client); err == nil {
		t.Error("client certificate verified without ClientCAs")
	}
	select {
	case c := <-accepted:
		t.Errorf("connection from %v handed on", c.RemoteAddr())
	default:
	}
}
