package node

import (
	"bufio"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// The Raft port carries two protocols: Raft RPCs (whose first byte is a
// small rpc type) and the internal HTTP channel for forwarded commands
// (whose first byte is an ASCII method letter). One port means one place to
// secure with mutual TLS and one port to open per box.

const muxSniffTimeout = 5 * time.Second

type connMux struct {
	base  net.Listener
	raftL *chanListener
	httpL *chanListener
	wg    sync.WaitGroup
}

func newConnMux(base net.Listener) *connMux {
	m := &connMux{
		base:  base,
		raftL: newChanListener(base.Addr()),
		httpL: newChanListener(base.Addr()),
	}
	m.wg.Add(1)
	go m.serve()
	return m
}

func (m *connMux) serve() {
	defer m.wg.Done()
	for {
		c, err := m.base.Accept()
		if err != nil {
			m.raftL.shut()
			m.httpL.shut()
			return
		}
		go m.route(c)
	}
}

// route sniffs the first byte (after any TLS handshake the base listener
// performs) and hands the connection on.
func (m *connMux) route(c net.Conn) {
	c.SetReadDeadline(time.Now().Add(muxSniffTimeout))
	br := bufio.NewReaderSize(c, 4096)
	first, err := br.Peek(1)
	if err != nil {
		c.Close()
		return
	}
	c.SetReadDeadline(time.Time{})
	pc := &peekedConn{Conn: c, r: br}
	if first[0] >= 'A' && first[0] <= 'Z' {
		m.httpL.push(pc)
	} else {
		m.raftL.push(pc)
	}
}

func (m *connMux) Close() error {
	err := m.base.Close()
	m.wg.Wait()
	return err
}

type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (p *peekedConn) Read(b []byte) (int, error) { return p.r.Read(b) }

type chanListener struct {
	addr net.Addr
	ch   chan net.Conn
	done chan struct{}
	once sync.Once
}

func newChanListener(addr net.Addr) *chanListener {
	return &chanListener{addr: addr, ch: make(chan net.Conn), done: make(chan struct{})}
}

func (l *chanListener) push(c net.Conn) {
	select {
	case l.ch <- c:
	case <-l.done:
		c.Close()
	}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) shut() { l.once.Do(func() { close(l.done) }) }

func (l *chanListener) Close() error { l.shut(); return nil }

func (l *chanListener) Addr() net.Addr { return l.addr }

// streamLayer gives Raft the raft side of the mux and a dialer.
type streamLayer struct {
	*chanListener
	advertise net.Addr
	dial      func(addr string, timeout time.Duration) (net.Conn, error)
}

func (s *streamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return s.dial(string(address), timeout)
}

func (s *streamLayer) Addr() net.Addr {
	if s.advertise != nil {
		return s.advertise
	}
	return s.chanListener.Addr()
}

var errNoAddr = errors.New("no address")

// addressProvider lets a node dial peers through addresses of its own
// (fault-injection proxies in tests) while the cluster configuration keeps
// the canonical raft addresses.
// It knows the configured peers; a member added later falls back to the
// address in the Raft configuration.
type addressProvider struct {
	dial map[string]string
}

func (a *addressProvider) ServerAddr(id raft.ServerID) (raft.ServerAddress, error) {
	if addr, ok := a.dial[string(id)]; ok {
		return raft.ServerAddress(addr), nil
	}
	return "", errNoAddr
}
