package node

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"golang.org/x/net/http2"
)

// Forwarded writes, read indexes and membership calls go to the other
// boxes over the internal channel. Over mutual TLS they share one HTTP/2
// connection per peer: a burst of writes through a follower is many
// streams on one connection, never a handshake per request, so the
// leader's per-host handshake cap (tlsnet) cannot turn a burst into 503s,
// cold or after the pool went idle. Concurrent first requests wait for the
// one dial in progress (the http2 connection pool shares it).

// defaultPeerIdle is how long an unused peer connection stays open.
const defaultPeerIdle = 90 * time.Second

// peerDialError marks a failure to connect to a peer (TCP or the TLS
// handshake, e.g. refused by a busy leader): the request never left this
// node, so any command may be retried.
type peerDialError struct{ err error }

func (e *peerDialError) Error() string { return "dial peer: " + e.err.Error() }
func (e *peerDialError) Unwrap() error { return e.err }

func (n *Node) newPeerClient(dial func(ctx context.Context, network, addr string) (net.Conn, string, error)) *http.Client {
	idle := n.opts.PeerIdleTimeout
	if idle <= 0 {
		idle = defaultPeerIdle
	}
	if n.opts.ClientTLS == nil {
		// Plain TCP (tests without certificates): HTTP/1.1, no handshakes
		// to cap.
		return &http.Client{Transport: &http.Transport{
			Proxy: nil,
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				c, _, err := dial(ctx, network, addr)
				return c, err
			},
			MaxIdleConnsPerHost: 256, // one per concurrent forwarded request
			IdleConnTimeout:     idle,
		}}
	}
	cfg := n.opts.ClientTLS.Clone()
	cfg.NextProtos = []string{http2.NextProtoTLS}
	return &http.Client{Transport: &http2.Transport{
		TLSClientConfig: cfg,
		DialTLSContext: func(ctx context.Context, network, addr string, cfg *tls.Config) (net.Conn, error) {
			raw, id, err := dial(ctx, network, addr)
			if err != nil {
				return nil, &peerDialError{err}
			}
			tc := tls.Client(raw, cfg)
			hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			if err := tc.HandshakeContext(hctx); err != nil {
				raw.Close()
				return nil, &peerDialError{err}
			}
			// The member dialled, not just any member: after a renumber
			// another box may hold its old address.
			if err := expectPeer(tc.ConnectionState(), id); err != nil {
				tc.Close()
				n.book.miss(id)
				return nil, &peerDialError{err}
			}
			if p := tc.ConnectionState().NegotiatedProtocol; p != http2.NextProtoTLS {
				tc.Close()
				return nil, &peerDialError{fmt.Errorf("peer %s negotiated %q, not h2", addr, p)}
			}
			return tc, nil
		},
		IdleConnTimeout: idle,
		// A peer that lost power sends no FIN: ping a silent connection
		// and drop it when the ping goes unanswered.
		ReadIdleTimeout: 10 * time.Second,
		PingTimeout:     5 * time.Second,
	}}
}

// countedDial is dialInternal, counted for the metrics (and the tests that
// check a burst reuses one connection).
func (n *Node) countedDial(ctx context.Context, network, addr string) (net.Conn, string, error) {
	n.metrics.peerDials.Inc()
	return n.dialInternal(ctx, network, addr)
}

// neverSent reports whether err says a request to a peer never left this
// node (no connection could be made), so that it surely did not apply.
func neverSent(err error) bool {
	var pd *peerDialError
	if errors.As(err, &pd) {
		return true
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
