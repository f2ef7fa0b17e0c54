// Package tlsnet carries node-to-node traffic over mutual TLS: a
// raft.StreamLayer for the Raft transport and a listener and HTTP client
// for the internal forwarding channel.
//
// Guests' phones share the store Wi-Fi and can reach every port, so the
// listeners here hand a connection to Raft or to the HTTP server only after
// a complete TLS handshake in which the peer proved a certificate of the
// cluster CA. Plain TCP, garbage, TLS without a client certificate, or a
// certificate from another CA is closed inside this package and never
// reaches the caller. Handshakes run in their own goroutines under a
// deadline, so a slow or silent client cannot hold up Accept for the
// others, and the number of handshakes in flight is bounded, per remote
// host and in total.
package tlsnet

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// DefaultHandshakeTimeout bounds the TLS handshake of an accepted
// connection (and of a Dial when raft gives no timeout).
const DefaultHandshakeTimeout = 5 * time.Second

// Default bounds on handshakes in flight.
const (
	DefaultMaxPending        = 256
	DefaultMaxPendingPerHost = 16
)

// ErrTooManyHandshakes is reported (never returned from Accept) when a
// connection is dropped because too many handshakes are already in flight.
var ErrTooManyHandshakes = errors.New("tlsnet: too many TLS handshakes in flight")

// ErrWrongProtocol is reported when a peer completed the handshake but did
// not negotiate the protocol this listener serves (e.g. an HTTP client on
// the Raft port).
var ErrWrongProtocol = errors.New("tlsnet: peer did not negotiate the expected application protocol")

// Option tunes a listener or stream layer.
type Option func(*options)

type options struct {
	handshakeTimeout time.Duration
	maxPending       int
	maxPendingHost   int
	onReject         func(remote net.Addr, err error)
}

func buildOptions(opts []Option) options {
	o := options{
		handshakeTimeout: DefaultHandshakeTimeout,
		maxPending:       DefaultMaxPending,
		maxPendingHost:   DefaultMaxPendingPerHost,
	}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// WithHandshakeTimeout sets how long an accepted connection may take to
// complete its handshake (default 5 s).
func WithHandshakeTimeout(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.handshakeTimeout = d
		}
	}
}

// WithMaxPendingHandshakes bounds handshakes in flight in total and per
// remote host; connections beyond the bound are closed at once.
func WithMaxPendingHandshakes(total, perHost int) Option {
	return func(o *options) {
		if total > 0 {
			o.maxPending = total
		}
		if perHost > 0 {
			o.maxPendingHost = perHost
		}
	}
}

// WithRejectHandler is called (from a handshake goroutine) for every
// accepted connection that is closed instead of handed on: a failed or
// timed-out handshake, a wrong protocol, too many handshakes in flight.
// Use it to log or count; it must not block.
func WithRejectHandler(fn func(remote net.Addr, err error)) Option {
	return func(o *options) { o.onReject = fn }
}

// NewMTLSListener wraps inner so that Accept returns only *tls.Conn whose
// handshake has completed under serverTLS. Give it the server config from
// pki.MutualTLSConfig (client certificates required) and pass the result
// to http.Server.Serve for the internal HTTPS endpoint. If serverTLS sets
// no NextProtos, "http/1.1" is offered, so a Raft client that wanders onto
// this port fails its handshake. Closing the returned listener closes
// inner.
//
// It fails closed: client certificates are always required and verified,
// and a config without ClientCAs (which would mean the system roots)
// verifies nobody.
func NewMTLSListener(inner net.Listener, serverTLS *tls.Config, opts ...Option) net.Listener {
	cfg := failClosed(serverTLS)
	if len(cfg.NextProtos) == 0 {
		cfg.NextProtos = []string{"http/1.1"}
	}
	p := newPort(inner, cfg, buildOptions(opts))
	p.fallback = p.newSub()
	p.start()
	return p.fallback
}

// failClosed clones cfg and makes sure only clients with a certificate
// from cfg.ClientCAs get through.
func failClosed(serverTLS *tls.Config) *tls.Config {
	cfg := serverTLS.Clone()
	if cfg == nil {
		cfg = &tls.Config{}
	}
	cfg.ClientAuth = tls.RequireAndVerifyClientCert
	if cfg.ClientCAs == nil {
		cfg.ClientCAs = x509.NewCertPool()
	}
	return cfg
}

// port runs the accept loop and the handshakes of one TCP listener and
// hands verified connections to its sub-listeners by negotiated ALPN
// protocol. It closes when every sub-listener is closed.
type port struct {
	inner  net.Listener
	config *tls.Config
	opts   options

	routes   map[string]*subListener // by negotiated protocol
	fallback *subListener            // any other protocol, or nil: reject

	done      chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup

	mu        sync.Mutex
	acceptErr error                 // why the accept loop stopped, if not Close
	inFlight  map[net.Conn]struct{} // raw conns being handshaken
	perHost   map[string]int
	open      int // sub-listeners not yet closed
}

func newPort(inner net.Listener, cfg *tls.Config, o options) *port {
	return &port{
		inner:    inner,
		config:   cfg,
		opts:     o,
		routes:   make(map[string]*subListener),
		done:     make(chan struct{}),
		inFlight: make(map[net.Conn]struct{}),
		perHost:  make(map[string]int),
	}
}

// newSub adds a sub-listener; call before start.
func (p *port) newSub() *subListener {
	p.open++
	return &subListener{port: p, conns: make(chan *tls.Conn), closed: make(chan struct{})}
}

func (p *port) start() {
	p.wg.Add(1)
	go p.acceptLoop()
}

// subListener is what callers Accept from.
type subListener struct {
	port      *port
	conns     chan *tls.Conn
	closed    chan struct{}
	closeOnce sync.Once
}

// Accept returns the next connection whose mutual-TLS handshake succeeded.
func (l *subListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
	case <-l.port.done:
	}
	l.port.mu.Lock()
	err := l.port.acceptErr
	l.port.mu.Unlock()
	if err == nil {
		err = net.ErrClosed
	}
	addr := l.port.inner.Addr()
	return nil, &net.OpError{Op: "accept", Net: addr.Network(), Addr: addr, Err: err}
}

// Close stops this listener; when it is the port's last open one, the
// port's TCP listener and every connection still in its handshake are
// closed too. Connections already returned by Accept belong to the caller.
func (l *subListener) Close() error {
	var err error
	l.closeOnce.Do(func() {
		close(l.closed)
		p := l.port
		p.mu.Lock()
		p.open--
		last := p.open == 0
		p.mu.Unlock()
		if last {
			err = p.close()
		}
	})
	return err
}

// Addr is the TCP listener's address.
func (l *subListener) Addr() net.Addr { return l.port.inner.Addr() }

// close shuts the whole port and waits for its goroutines.
func (p *port) close() error {
	var err error
	p.closeOnce.Do(func() {
		close(p.done)
		err = p.inner.Close()
		p.mu.Lock()
		for c := range p.inFlight {
			c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return err
}

func (p *port) acceptLoop() {
	defer p.wg.Done()
	var delay time.Duration
	for {
		raw, err := p.inner.Accept()
		if err != nil {
			select {
			case <-p.done:
				return
			default:
			}
			if isTemporary(err) {
				// e.g. out of file descriptors: back off like net/http.
				if delay == 0 {
					delay = 5 * time.Millisecond
				} else if delay *= 2; delay > time.Second {
					delay = time.Second
				}
				select {
				case <-time.After(delay):
					continue
				case <-p.done:
					return
				}
			}
			p.mu.Lock()
			p.acceptErr = err
			p.mu.Unlock()
			go p.close() // close waits for this goroutine
			return
		}
		delay = 0
		host := hostOf(raw.RemoteAddr())
		if !p.reserve(raw, host) {
			raw.Close()
			p.reject(raw.RemoteAddr(), ErrTooManyHandshakes)
			continue
		}
		p.wg.Add(1)
		go p.handshake(raw, host)
	}
}

func (p *port) handshake(raw net.Conn, host string) {
	defer p.wg.Done()
	tc := tls.Server(raw, p.config)
	var sub *subListener
	err := raw.SetDeadline(time.Now().Add(p.opts.handshakeTimeout))
	if err == nil {
		err = tc.Handshake()
	}
	if err == nil {
		proto := tc.ConnectionState().NegotiatedProtocol
		if sub = p.routes[proto]; sub == nil {
			sub = p.fallback
		}
		if sub == nil {
			err = fmt.Errorf("%w (got %q)", ErrWrongProtocol, proto)
		}
	}
	if err == nil {
		err = raw.SetDeadline(time.Time{})
	}
	p.release(raw, host)
	if err != nil {
		raw.Close()
		p.reject(raw.RemoteAddr(), err)
		return
	}
	select {
	case sub.conns <- tc:
	case <-sub.closed:
		raw.Close()
	case <-p.done:
		raw.Close()
	}
}

func (p *port) reserve(raw net.Conn, host string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.done:
		return false
	default:
	}
	if len(p.inFlight) >= p.opts.maxPending || p.perHost[host] >= p.opts.maxPendingHost {
		return false
	}
	p.inFlight[raw] = struct{}{}
	p.perHost[host]++
	return true
}

func (p *port) release(raw net.Conn, host string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.inFlight, raw)
	if p.perHost[host]--; p.perHost[host] <= 0 {
		delete(p.perHost, host)
	}
}

func (p *port) reject(remote net.Addr, err error) {
	select {
	case <-p.done:
		return // shutting down: the failures are our own doing
	default:
	}
	if p.opts.onReject != nil {
		p.opts.onReject(remote, fmt.Errorf("tlsnet: rejected %v: %w", remote, err))
	}
}

func hostOf(a net.Addr) string {
	if a == nil {
		return ""
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}

func isTemporary(err error) bool {
	var t interface{ Temporary() bool }
	return errors.As(err, &t) && t.Temporary()
}
