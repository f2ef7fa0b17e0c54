package tlsnet_test

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"masterorder/node/pki"
	"masterorder/node/tlsnet"
)

// TestSharedPort runs Raft and the internal HTTPS channel on one port per
// node, told apart by ALPN.
func TestSharedPort(t *testing.T) {
	ca := newCA(t, "cluster")
	var nodes []*raftNode
	var urls []string
	var clients []*http.Client
	for _, id := range []string{"a", "b", "c"} {
		c := nodeTLS(t, ca, id)
		rj := &rejects{}
		layer, httpL, err := tlsnet.NewSharedPort("127.0.0.1:0", nil, c.server, c.client,
			tlsnet.WithHandshakeTimeout(time.Second), tlsnet.WithRejectHandler(rj.handler))
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{
			Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, id+" answers "+pki.PeerNodeID(*r.TLS))
			}),
			ReadHeaderTimeout: 5 * time.Second,
		}
		go srv.Serve(httpL)
		t.Cleanup(func() { srv.Close() })
		nodes = append(nodes, startNodeOn(t, id, layer, rj))
		urls = append(urls, "https://"+httpL.Addr().String()+"/internal/ping")
		clients = append(clients, tlsnet.HTTPClient(c.client))
	}
	if layerAddr, httpAddr := string(nodes[0].addr), urls[0]; "https://"+layerAddr+"/internal/ping" != httpAddr {
		t.Fatalf("raft %s and http %s are not one port", layerAddr, httpAddr)
	}
	var servers []raft.Server
	for _, n := range nodes {
		servers = append(servers, n.server())
	}
	// Every node bootstraps the same configuration, as node/ does.
	for _, n := range nodes {
		if err := n.raft.BootstrapCluster(raft.Configuration{Servers: servers}).Error(); err != nil {
			t.Fatal(err)
		}
	}
	leader := leaderOf(t, nodes)
	applyEverywhere(t, leader, nodes, "shared-1")

	// Internal HTTPS between every pair.
	for i, cl := range clients {
		for j, u := range urls {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			req, _ := http.NewRequestWithContext(ctx, "GET", u, nil)
			resp, err := cl.Do(req)
			if err != nil {
				cancel()
				t.Fatalf("%s -> %s: %v", nodes[i].id, nodes[j].id, err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			cancel()
			if want := nodes[j].id + " answers " + nodes[i].id; string(body) != want {
				t.Errorf("%s -> %s: %q, want %q", nodes[i].id, nodes[j].id, body, want)
			}
		}
	}

	addr := string(leader.addr)
	// Garbage, no ALPN, a foreign CA: all closed; the cluster goes on.
	g, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	g.Write([]byte("POST /internal/apply HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"))
	assertClosedByPeer(t, g, 3*time.Second)
	g.Close()

	noALPN := nodeTLS(t, ca, "z").client.Clone()
	noALPN.NextProtos = nil
	// Its handshake succeeds (it is a cluster certificate), then the port
	// closes it without handing it to either side.
	tlsExchange(addr, noALPN)
	waitFor(t, "the no-ALPN connection to be rejected", 3*time.Second, func() bool {
		leader.rj.mu.Lock()
		defer leader.rj.mu.Unlock()
		for _, err := range leader.rj.errs {
			if errors.Is(err, tlsnet.ErrWrongProtocol) {
				return true
			}
		}
		return false
	})
	rogue := tlsnet.HTTPClient(nodeTLS(t, newCA(t, "other"), "x").client)
	rogue.Timeout = 3 * time.Second
	if resp, err := rogue.Get("https://" + addr + "/internal/ping"); err == nil {
		resp.Body.Close()
		t.Error("foreign CA served over the shared port")
	}
	applyEverywhere(t, leader, nodes, "shared-2")
}

func TestSharedPortClosesWhenBothClosed(t *testing.T) {
	ca := newCA(t, "cluster")
	c := nodeTLS(t, ca, "a")
	layer, httpL, err := tlsnet.NewSharedPort("127.0.0.1:0", nil, c.server, c.client)
	if err != nil {
		t.Fatal(err)
	}
	addr := httpL.Addr().String()
	layer.Close()
	if _, err := layer.Accept(); err == nil {
		t.Error("Accept on closed layer")
	}
	// HTTP still works on the port.
	accepted := make(chan net.Conn, 1)
	go func() {
		if conn, err := httpL.Accept(); err == nil {
			accepted <- conn
		}
	}()
	cfg := c.client.Clone()
	cfg.NextProtos = []string{"http/1.1"}
	conn, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		t.Fatalf("http side after raft closed: %v", err)
	}
	conn.Close()
	select {
	case sc := <-accepted:
		sc.Close()
	case <-time.After(3 * time.Second):
		t.Fatal("http side did not accept")
	}
	httpL.Close()
	if _, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		t.Error("port still open after both listeners closed")
	}
}
