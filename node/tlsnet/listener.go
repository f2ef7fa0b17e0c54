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
	return newListener(inner, cfg, "", buildOptions(opts))
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

// listener runs the accept loop and the handshakes.
type listener struct {
	inner       net.Listener
	config      *tls.Config
	requireALPN string
	opts        options

	conns     chan *tls.Conn
	done      chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup

	mu        sync.Mutex
	acceptErr error                 // why the accept loop stopped, if not Close
	inFlight  map[net.Conn]struct{} // raw conns being handshaken
	perHost   map[string]int
}

func newListener(inner net.Listener, cfg *tls.Config, requireALPN string, o options) *listener {
	l := &listener{
		inner:       inner,
		config:      cfg,
		requireALPN: requireALPN,
		opts:        o,
		conns:       make(chan *tls.Conn),
		done:        make(chan struct{}),
		inFlight:    make(map[net.Conn]struct{}),
		perHost:     make(map[string]int),
	}
	l.wg.Add(1)
	go l.acceptLoop()
	return l
}

// Accept returns the next connection whose mutual-TLS handshake succeeded.
func (l *listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		l.mu.Lock()
		err := l.acceptErr
		l.mu.Unlock()
		if err == nil {
			err = net.ErrClosed
		}
		return nil, &net.OpError{Op: "accept", Net: l.inner.Addr().Network(), Addr: l.inner.Addr(), Err: err}
	}
}

// Close stops accepting, closes the inner listener and every connection
// still in its handshake, and waits for the handshake goroutines.
// Connections already returned by Accept belong to the caller.
func (l *listener) Close() error {
	var err error
	l.closeOnce.Do(func() {
		close(l.done)
		err = l.inner.Close()
		l.mu.Lock()
		for c := range l.inFlight {
			c.Close()
		}
		l.mu.Unlock()
		l.wg.Wait()
	})
	return err
}

// Addr is the inner listener's address.
func (l *listener) Addr() net.Addr { return l.inner.Addr() }

func (l *listener) acceptLoop() {
	defer l.wg.Done()
	var delay time.Duration
	for {
		raw, err := l.inner.Accept()
		if err != nil {
			select {
			case <-l.done:
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
				case <-l.done:
					return
				}
			}
			l.mu.Lock()
			l.acceptErr = err
			l.mu.Unlock()
			go l.Close() // Close waits for this goroutine
			return
		}
		delay = 0
		host := hostOf(raw.RemoteAddr())
		if !l.reserve(raw, host) {
			raw.Close()
			l.reject(raw.RemoteAddr(), ErrTooManyHandshakes)
			continue
		}
		l.wg.Add(1)
		go l.handshake(raw, host)
	}
}

func (l *listener) handshake(raw net.Conn, host string) {
	defer l.wg.Done()
	tc := tls.Server(raw, l.config)
	err := raw.SetDeadline(time.Now().Add(l.opts.handshakeTimeout))
	if err == nil {
		err = tc.Handshake()
	}
	if err == nil && l.requireALPN != "" && tc.ConnectionState().NegotiatedProtocol != l.requireALPN {
		err = ErrWrongProtocol
	}
	if err == nil {
		err = raw.SetDeadline(time.Time{})
	}
	l.release(raw, host)
	if err != nil {
		raw.Close()
		l.reject(raw.RemoteAddr(), err)
		return
	}
	select {
	case l.conns <- tc:
	case <-l.done:
		raw.Close()
	}
}

func (l *listener) reserve(raw net.Conn, host string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-l.done:
		return false
	default:
	}
	if len(l.inFlight) >= l.opts.maxPending || l.perHost[host] >= l.opts.maxPendingHost {
		return false
	}
	l.inFlight[raw] = struct{}{}
	l.perHost[host]++
	return true
}

func (l *listener) release(raw net.Conn, host string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.inFlight, raw)
	if l.perHost[host]--; l.perHost[host] <= 0 {
		delete(l.perHost, host)
	}
}

func (l *listener) reject(remote net.Addr, err error) {
	select {
	case <-l.done:
		return // shutting down: the failures are our own doing
	default:
	}
	if l.opts.onReject != nil {
		l.opts.onReject(remote, fmt.Errorf("tlsnet: rejected %v: %w", remote, err))
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
