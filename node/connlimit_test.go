package node

import (
	"net"
	"testing"
	"time"
)

// One address opening connections past the bound gets the extra ones
// closed at once; closing one makes room again.
func TestConnLimitPerAddress(t *testing.T) {
	base, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := limitConns(base, 3)
	ln.countLoopback = true
	defer ln.Close()
	accepted := make(chan net.Conn, 10)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	var clients []net.Conn
	for i := 0; i < 5; i++ {
		c, err := net.Dial("tcp", base.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		clients = append(clients, c)
	}
	var server []net.Conn
	deadline := time.After(5 * time.Second)
	for len(server) < 3 {
		select {
		case c := <-accepted:
			server = append(server, c)
		case <-deadline:
			t.Fatalf("accepted %d of 3", len(server))
		}
	}
	select {
	case <-accepted:
		t.Fatal("a fourth connection from one address was accepted")
	case <-time.After(300 * time.Millisecond):
	}
	// The refused ones are closed: a read ends.
	for _, c := range clients[3:] {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil {
			t.Error("an over-limit connection is still open")
		}
	}
	server[0].Close()
	c, err := net.Dial("tcp", base.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	select {
	case s := <-accepted:
		s.Close()
	case <-time.After(5 * time.Second):
		t.Error("no room after a connection closed")
	}
	for _, s := range server[1:] {
		s.Close()
	}
}
