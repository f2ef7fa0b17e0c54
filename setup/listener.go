package setup

import (
	"bufio"
	"crypto/tls"
	"net"
	"sync"
	"time"
)

// sniffListener serves plain HTTP and TLS on one port: a connection whose
// first byte is a TLS handshake record (0x16) is wrapped in tls.Server,
// which net/http recognises (r.TLS is set). So the owner's phone opens
// http://box/setup/ while the boxes claim each other over TLS on the same
// announced port.
type sniffListener struct {
	net.Listener
	tls   *tls.Config
	conns chan net.Conn
	once  sync.Once
	done  chan struct{}
}

func newSniffListener(l net.Listener, cfg *tls.Config) *sniffListener {
	s := &sniffListener{Listener: l, tls: cfg, conns: make(chan net.Conn), done: make(chan struct{})}
	go s.loop()
	return s
}

func (s *sniffListener) loop() {
	for {
		c, err := s.Listener.Accept()
		if err != nil {
			s.once.Do(func() { close(s.done) })
			return
		}
		go s.sniff(c)
	}
}

func (s *sniffListener) sniff(c net.Conn) {
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	first, err := br.Peek(1)
	c.SetReadDeadline(time.Time{})
	if err != nil {
		c.Close()
		return
	}
	var out net.Conn = &peekedConn{Conn: c, r: br}
	if first[0] == 0x16 {
		out = tls.Server(out, s.tls)
	}
	select {
	case s.conns <- out:
	case <-s.done:
		c.Close()
	}
}

func (s *sniffListener) Accept() (net.Conn, error) {
	select {
	case c := <-s.conns:
		return c, nil
	case <-s.done:
		return nil, net.ErrClosed
	}
}

func (s *sniffListener) Close() error {
	err := s.Listener.Close()
	s.once.Do(func() { close(s.done) })
	return err
}

// peekedConn reads through the buffer that holds the sniffed byte.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (p *peekedConn) Read(b []byte) (int, error) { return p.r.Read(b) }
