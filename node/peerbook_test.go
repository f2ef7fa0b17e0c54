package node

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"masterorder/node/peerfind"
)

// A dead member makes every dial fail, many times a second: the LAN is
// asked at most once per gap however many misses there are, and what it
// answered is where the member is dialled next.
func TestPeerBookAsksTheLANAtMostOncePerGap(t *testing.T) {
	var asked atomic.Int32
	b := newPeerBook(func(ctx context.Context) (map[string]peerfind.Member, error) {
		asked.Add(1)
		return map[string]peerfind.Member{"b": {NodeID: "b", IP: net.IPv4(10, 78, 0, 22)}}, nil
	})
	if got := b.current("b", "10.77.0.12:7000"); got != "10.77.0.12:7000" {
		t.Fatalf("before any answer: %s, want the configured address", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	const gap = 200 * time.Millisecond
	go func() { defer close(done); b.run(ctx, gap) }()
	start := time.Now()
	for time.Since(start) < time.Second {
		b.miss("b")
		time.Sleep(time.Millisecond)
	}
	elapsed := time.Since(start)
	cancel()
	<-done
	n := int(asked.Load())
	if n < 1 || time.Duration(n-1)*gap > elapsed {
		t.Fatalf("asked the LAN %d times in %v with a gap of %v", n, elapsed, gap)
	}
	if got := b.current("b", "10.77.0.12:7000"); got != "10.78.0.22:7000" {
		t.Fatalf("after the answer: %s, want 10.78.0.22:7000", got)
	}
	// A loopback cluster (tests, the demo) is never looked up.
	if got := b.current("b", "127.0.0.1:7000"); got != "127.0.0.1:7000" {
		t.Fatalf("loopback: %s", got)
	}
}

func TestBindAddrListensOnEveryAddressButLoopback(t *testing.T) {
	for in, want := range map[string]string{
		"10.77.0.11:7000":        ":7000",
		"masterorder.local:8443": ":8443",
		"127.0.0.1:7000":         "127.0.0.1:7000",
		"127.0.0.3:80":           "127.0.0.3:80",
		"localhost:80":           "localhost:80",
		":80":                    ":80",
	} {
		if got := bindAddr(in); got != want {
			t.Errorf("bindAddr(%q) = %q, want %q", in, got, want)
		}
	}
}
