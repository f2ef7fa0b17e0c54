package tlsnet

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/hashicorp/raft"
)

// RaftALPN is the application protocol both ends of a Raft connection
// negotiate; the Raft listener closes a peer that did not negotiate it.
const RaftALPN = "masterorder-raft/1"

// StreamLayer is a raft.StreamLayer over mutual TLS. Accept returns only
// connections whose handshake has completed with a certificate of the
// cluster CA and the Raft ALPN protocol; Dial verifies the remote node's
// certificate the same way.
type StreamLayer struct {
	*subListener
	advertise net.Addr
	client    *tls.Config
	timeout   time.Duration
}

var _ raft.StreamLayer = (*StreamLayer)(nil)

// NewStreamLayer listens on bindAddr (e.g. "0.0.0.0:7000" or
// "127.0.0.1:0") and returns a stream layer for
// raft.NewNetworkTransportWithConfig. advertise is the address other nodes
// dial (the raft_addr in the cluster configuration); nil means the bound
// address, which must then not be a wildcard. serverTLS and clientTLS are
// the two configs from pki.MutualTLSConfig; they are cloned, not modified.
func NewStreamLayer(bindAddr string, advertise net.Addr, serverTLS, clientTLS *tls.Config, opts ...Option) (*StreamLayer, error) {
	p, err := listenPort(bindAddr, advertise, serverTLS, clientTLS, []string{RaftALPN}, opts)
	if err != nil {
		return nil, err
	}
	layer := p.raftLayer(advertise, clientTLS)
	p.start()
	return layer, nil
}

// NewSharedPort serves Raft and the internal HTTPS channel on one port,
// telling them apart by the ALPN protocol negotiated in the handshake:
// RaftALPN goes to the returned StreamLayer, "h2" and "http/1.1" to the
// returned listener (for http.Server.Serve; HTTP/2 lets a peer multiplex
// any number of calls over one connection). A connection that negotiated neither
// is closed, so dial it only with StreamLayer.Dial and HTTPClient, which
// offer the right protocol. The port closes when both are closed.
func NewSharedPort(bindAddr string, advertise net.Addr, serverTLS, clientTLS *tls.Config, opts ...Option) (*StreamLayer, net.Listener, error) {
	p, err := listenPort(bindAddr, advertise, serverTLS, clientTLS, []string{RaftALPN, "h2", "http/1.1"}, opts)
	if err != nil {
		return nil, nil, err
	}
	layer := p.raftLayer(advertise, clientTLS)
	httpL := p.newSub()
	p.routes["h2"] = httpL
	p.routes["http/1.1"] = httpL
	p.start()
	return layer, httpL, nil
}

func listenPort(bindAddr string, advertise net.Addr, serverTLS, clientTLS *tls.Config, protos []string, opts []Option) (*port, error) {
	if serverTLS == nil || clientTLS == nil {
		return nil, errors.New("tlsnet: server and client TLS configs are required")
	}
	if serverTLS.ClientAuth != tls.RequireAndVerifyClientCert || serverTLS.ClientCAs == nil {
		return nil, errors.New("tlsnet: server TLS config must require and verify client certificates against the cluster CA")
	}
	ln, err := net.Listen("tcp", bindAddr)
	if err != nil {
		return nil, fmt.Errorf("tlsnet: listen on %s: %w", bindAddr, err)
	}
	addr := advertise
	if addr == nil {
		addr = ln.Addr()
	}
	tcp, ok := addr.(*net.TCPAddr)
	if !ok || tcp.IP == nil || tcp.IP.IsUnspecified() {
		ln.Close()
		return nil, fmt.Errorf("tlsnet: %v is not an address other nodes can dial; set an advertise address", addr)
	}
	srv := failClosed(serverTLS)
	srv.NextProtos = protos
	return newPort(ln, srv, buildOptions(opts)), nil
}

func (p *port) raftLayer(advertise net.Addr, clientTLS *tls.Config) *StreamLayer {
	sub := p.newSub()
	p.routes[RaftALPN] = sub
	cli := clientTLS.Clone()
	cli.NextProtos = []string{RaftALPN}
	return &StreamLayer{subListener: sub, advertise: advertise, client: cli, timeout: p.opts.handshakeTimeout}
}

// Addr is the advertised address if one was given, else the bound one.
func (s *StreamLayer) Addr() net.Addr {
	if s.advertise != nil {
		return s.advertise
	}
	return s.subListener.Addr()
}

// Dial connects to another node's Raft port and completes the TLS
// handshake, verifying that the node holds a cluster certificate, within
// timeout (the handshake timeout if timeout is zero). An address written
// "id@HOST:PORT" also demands that the certificate name node id (its
// common name): a member found at a new address is proven to be that
// member, not another box that now has its old address.
func (s *StreamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	if timeout <= 0 {
		timeout = s.timeout
	}
	id, addr, ok := strings.Cut(string(address), "@")
	if !ok {
		id, addr = "", string(address)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	d := &tls.Dialer{Config: s.client}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("tlsnet: dial %s: %w", address, err)
	}
	if id != "" {
		cs := conn.(*tls.Conn).ConnectionState()
		if len(cs.PeerCertificates) == 0 || cs.PeerCertificates[0].Subject.CommonName != id {
			conn.Close()
			return nil, fmt.Errorf("tlsnet: dial %s: the node there is not %s", address, id)
		}
	}
	return conn, nil
}

// HTTPClient returns a client for calling other nodes' internal HTTPS
// endpoints (served through NewMTLSListener) with this node's certificate.
// Use https:// URLs. It never uses an environment proxy, never follows
// redirects (the caller sees the 3xx), and has no overall timeout: bound
// each call with its request context.
func HTTPClient(clientTLS *tls.Config) *http.Client {
	cfg := clientTLS.Clone()
	cfg.NextProtos = []string{"http/1.1"}
	return &http.Client{
		Transport: &http.Transport{
			Proxy: nil,
			DialContext: (&net.Dialer{
				Timeout:   DefaultHandshakeTimeout,
				KeepAlive: 30 * time.Second,
			}).DialContext,
			TLSClientConfig:       cfg,
			TLSHandshakeTimeout:   DefaultHandshakeTimeout,
			ForceAttemptHTTP2:     false,
			MaxIdleConns:          32,
			MaxIdleConnsPerHost:   8,
			IdleConnTimeout:       90 * time.Second,
			ExpectContinueTimeout: time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}
