package node

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"masterorder/node/pki"
)

// A live leader that refuses a connection (its handshake cap reached: it
// closes the TCP connection before the TLS handshake) is "not sent",
// which Propose retries, never "outcome unknown"; and concurrent calls to
// one peer share one dial.
func TestPeerClientRefusedHandshakeIsNeverSent(t *testing.T) {
	ca, err := pki.NewCA("peer client test", 0)
	if err != nil {
		t.Fatal(err)
	}
	cert, key, err := ca.IssueNode("a", []string{"127.0.0.1"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, cli, err := pki.MutualTLSConfig(ca.CertPEM(), cert, key)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			time.Sleep(50 * time.Millisecond) // as a busy listener would
			c.Close()
		}
	}()
	n := &Node{opts: Options{ClientTLS: cli}, metrics: &nodeMetrics{peerDials: prometheus.NewCounter(prometheus.CounterOpts{Name: "dials"})}}
	c := n.newPeerClient(n.countedDial)
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+ln.Addr().String()+"/internal/readindex", nil)
			resp, err := c.Do(req)
			if err == nil {
				resp.Body.Close()
			}
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err == nil || !neverSent(err) {
			t.Fatalf("refused handshake: %v, want an error that says the request was never sent", err)
		}
	}
	if got := accepted.Load(); got < 1 || got > 8 {
		t.Fatalf("%d connections for 8 concurrent calls", got)
	}
	t.Logf("8 concurrent calls, %d connection(s) tried", accepted.Load())
}
