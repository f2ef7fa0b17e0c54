// Package printertest is a kitchen printer for tests: a raw TCP 9100
// listener on a free loopback port that records what it would print (the
// documents decoded from the ESC/POS stream) and answers the status
// request a sender waits for. It can be switched off and on, stall, and
// reset connections, so tests see what a cook would read under faults.
package printertest

import (
	"bytes"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"masterorder/orders/printing/escpos"
)

// Modes of a Printer, for the connections it accepts from then on.
const (
	OK        = iota
	Reset     // reads part of the ticket, then resets the connection
	Stall     // accepts, never reads
	Flaky     // per connection at random: OK, Reset or ResetDone
	ResetDone // reads the whole ticket (it printed), resets before confirming
)

// Printer records the documents that reached the paper: whole only when
// they reached the cut (a ticket cut short is torn off half printed).
type Printer struct {
	t testing.TB
	// Addr is host:port, the same across Off and On.
	Addr string

	mu    sync.Mutex
	ln    net.Listener
	mode  int
	docs  []escpos.Printed
	conns map[net.Conn]bool
	wg    sync.WaitGroup
}

// Start listens on a free loopback port; the printer is switched off
// when the test ends.
func Start(t testing.TB) *Printer {
	p := &Printer{t: t, conns: map[net.Conn]bool{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.Addr = ln.Addr().String()
	p.serve(ln)
	t.Cleanup(p.Stop)
	return p
}

func (p *Printer) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			p.conns[c] = true
			mode := p.mode
			p.mu.Unlock()
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				p.handle(c, mode)
				p.mu.Lock()
				delete(p.conns, c)
				p.mu.Unlock()
			}()
		}
	}()
}

// SetMode changes how the connections accepted from now on behave.
func (p *Printer) SetMode(m int) {
	p.mu.Lock()
	p.mode = m
	p.mu.Unlock()
}

// handle reads one connection as a printer would.
func (p *Printer) handle(c net.Conn, mode int) {
	defer c.Close()
	if mode == Stall {
		for p.open(c) { // never read: park until the printer is switched off
			time.Sleep(50 * time.Millisecond)
		}
		return
	}
	if mode == Flaky {
		mode = []int{OK, OK, OK, Reset, ResetDone}[rand.IntN(5)]
	}
	var buf []byte
	chunk := make([]byte, 4096)
	for {
		n, err := c.Read(chunk)
		buf = append(buf, chunk[:n]...)
		if mode == Reset && len(buf) > 20 {
			p.record(buf[:len(buf)/2])
			reset(c)
			return
		}
		if bytes.HasSuffix(buf, escpos.StatusRequest) {
			p.record(buf[:len(buf)-len(escpos.StatusRequest)])
			if mode == ResetDone {
				reset(c)
				return
			}
			c.Write([]byte{0})
			buf = nil
		}
		if err != nil {
			if len(buf) > 0 {
				p.record(buf)
			}
			return
		}
	}
}

// reset closes with RST instead of FIN.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}

func (p *Printer) record(stream []byte) {
	docs, err := escpos.Decode(stream)
	if err != nil && !strings.Contains(err.Error(), "cut short") {
		p.t.Errorf("printer got a stream it cannot read: %v", err)
	}
	p.mu.Lock()
	p.docs = append(p.docs, docs...)
	p.mu.Unlock()
}

func (p *Printer) open(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.conns[c]
}

// Off stops listening and drops open connections (a printer switched off).
func (p *Printer) Off() {
	p.mu.Lock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
	p.mu.Unlock()
}

// On listens again on the same address.
func (p *Printer) On() {
	var ln net.Listener
	var err error
	for i := 0; i < 50; i++ {
		if ln, err = net.Listen("tcp", p.Addr); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		p.t.Fatalf("printer back on %s: %v", p.Addr, err)
	}
	p.serve(ln)
}

// Stop switches the printer off and waits for its goroutines.
func (p *Printer) Stop() {
	p.Off()
	p.wg.Wait()
}

// Tickets counts whole tickets by the number printed big (without its
// "No." prefix): originals, and copies marked 再送 / COPY or 再発行 /
// REPRINT; all lists every whole document in the order printed.
func (p *Printer) Tickets() (originals, copies map[string]int, all []escpos.Printed) {
	p.mu.Lock()
	defer p.mu.Unlock()
	originals, copies = map[string]int{}, map[string]int{}
	for _, d := range p.docs {
		if !d.Cut {
			continue // cut short: a cook tears off half a ticket
		}
		all = append(all, d)
		if len(d.Double) == 0 {
			continue
		}
		num := strings.TrimPrefix(d.Double[0], "No.")
		if d.Has(escpos.MarkCopy) || d.Has(escpos.MarkReprint) {
			copies[num]++
		} else {
			originals[num]++
		}
	}
	return originals, copies, all
}
