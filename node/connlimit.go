package node

import (
	"net"
	"sync"
)

// MaxConnsPerAddr bounds the open HTTP connections from one remote
// address: a phone opening sockets by the thousand (each costs a file
// descriptor and a goroutine) would otherwise starve the kitchen screens
// and the other guests. A store's real clients keep a handful each.
const MaxConnsPerAddr = 128

// connLimitListener closes connections beyond the per-address bound at
// once. Loopback (the box itself, a test's load generator) is not counted
// unless countLoopback.
type connLimitListener struct {
	net.Listener
	max           int
	countLoopback bool
	mu            sync.Mutex
	open          map[string]int
}

func limitConns(ln net.Listener, max int) *connLimitListener {
	return &connLimitListener{Listener: ln, max: max, open: map[string]int{}}
}

func (l *connLimitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		host, _, err := net.SplitHostPort(c.RemoteAddr().String())
		if err != nil {
			return c, nil
		}
		if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() && !l.countLoopback {
			return c, nil
		}
		l.mu.Lock()
		if l.open[host] >= l.max {
			l.mu.Unlock()
			c.Close()
			continue
		}
		l.open[host]++
		l.mu.Unlock()
		return &countedConn{Conn: c, release: func() { l.release(host) }}, nil
	}
}

func (l *connLimitListener) release(host string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[host]--; l.open[host] <= 0 {
		delete(l.open, host)
	}
}

type countedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *countedConn) Close() error {
	c.once.Do(c.release)
	return c.Conn.Close()
}
