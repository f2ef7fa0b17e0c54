package watchdog

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeSystemd is the other end of NOTIFY_SOCKET: a unixgram socket the
// test listens on, as systemd does for a Type=notify unit.
type fakeSystemd struct {
	conn *net.UnixConn
	msgs chan string
}

func listenNotify(t *testing.T, watchdog time.Duration) *fakeSystemd {
	t.Helper()
	// Short path: a unix socket's name is limited to 108 bytes.
	dir, err := filepath.Abs(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "n")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("NOTIFY_SOCKET", path)
	if watchdog > 0 {
		t.Setenv("WATCHDOG_USEC", strconv.FormatInt(watchdog.Microseconds(), 10))
	} else {
		t.Setenv("WATCHDOG_USEC", "")
	}
	f := &fakeSystemd{conn: conn, msgs: make(chan string, 1024)}
	go func() {
		defer close(f.msgs)
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			f.msgs <- string(buf[:n])
		}
	}()
	t.Cleanup(func() { conn.Close() })
	return f
}

// mark puts a line on the socket from the test itself: everything the
// dog sent before it is read before it (one sender goroutine, one queue).
func (f *fakeSystemd) mark(t *testing.T, s string) {
	c, err := net.DialUnix("unixgram", nil, f.conn.LocalAddr().(*net.UnixAddr))
	if err != nil {
		t.Error(err)
		return
	}
	defer c.Close()
	if _, err := c.Write([]byte(s)); err != nil {
		t.Error(err)
	}
}

// next returns the next message; the test fails if none comes within a
// minute (a bound for a stuck test, not a speed requirement).
func (f *fakeSystemd) next(t *testing.T) string {
	t.Helper()
	select {
	case m, ok := <-f.msgs:
		if !ok {
			t.Fatal("notify socket closed")
		}
		return m
	case <-time.After(time.Minute):
		t.Fatal("no message from the process")
		return ""
	}
}

// TestReadyThenFedOnlyWhileCheckPasses: READY=1 comes at the first passing
// check, WATCHDOG=1 after every passing check, none while the check fails
// (a deadlocked process), again once it passes, STOPPING=1 at the end.
func TestReadyThenFedOnlyWhileCheckPasses(t *testing.T) {
	sd := listenNotify(t, 30*time.Millisecond)
	var failing atomic.Bool
	failing.Store(true) // not serving yet
	check := func(ctx context.Context) error {
		if failing.Load() {
			sd.mark(t, "MARK")
			return errors.New("not serving")
		}
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := Start(ctx, check, slog.New(slog.DiscardHandler))
	if d == nil {
		t.Fatal("Start returned nil with NOTIFY_SOCKET set")
	}

	// Before the first pass: only the test's own marks, no READY=1.
	for range 3 {
		if m := sd.next(t); m != "MARK" {
			t.Fatalf("before the check passed the process sent %q", m)
		}
	}
	failing.Store(false)
	for m := sd.next(t); m != "READY=1"; m = sd.next(t) {
		if m != "MARK" {
			t.Fatalf("got %q before READY=1", m)
		}
	}
	for range 5 {
		if m := sd.next(t); m != "WATCHDOG=1" {
			t.Fatalf("while serving: got %q, want WATCHDOG=1", m)
		}
	}

	// The check fails: after its first failing call nothing but marks.
	failing.Store(true)
	for m := sd.next(t); m != "MARK"; m = sd.next(t) {
		if m != "WATCHDOG=1" {
			t.Fatalf("got %q", m)
		}
	}
	for range 5 {
		if m := sd.next(t); m != "MARK" {
			t.Fatalf("fed the watchdog while the check failed: %q", m)
		}
	}
	failing.Store(false)
	for m := sd.next(t); m != "WATCHDOG=1"; m = sd.next(t) {
		if m != "MARK" {
			t.Fatalf("got %q", m)
		}
	}
	cancel()
	for m := sd.next(t); m != "STOPPING=1"; m = sd.next(t) {
		if m != "WATCHDOG=1" {
			t.Fatalf("got %q before STOPPING=1", m)
		}
	}
}

// TestHTTPCheck: READY=1 only once the HTTP server answers, WATCHDOG=1
// while it does, none while its handler hangs (the requests time out).
func TestHTTPCheck(t *testing.T) {
	sd := listenNotify(t, 60*time.Millisecond)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // not serving yet: the checks are refused

	var hung atomic.Bool
	release := make(chan struct{})
	var hangs sync.WaitGroup
	var calls atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if hung.Load() {
			sd.mark(t, "HUNG")
			hangs.Add(1)
			defer hangs.Done()
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		w.Write([]byte("ok"))
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := Start(ctx, HTTP(":"+port(t, addr), "/healthz"), slog.New(slog.DiscardHandler))
	if d == nil {
		t.Fatal("Start returned nil with NOTIFY_SOCKET set")
	}

	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("port taken again meanwhile: %v", err)
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	defer srv.Close()

	if m := sd.next(t); m != "READY=1" {
		t.Fatalf("got %q, want READY=1", m)
	}
	if calls.Load() == 0 {
		t.Fatal("READY=1 before the server answered")
	}
	for range 3 {
		if m := sd.next(t); m != "WATCHDOG=1" {
			t.Fatalf("got %q, want WATCHDOG=1", m)
		}
	}
	hung.Store(true)
	for m := sd.next(t); m != "HUNG"; m = sd.next(t) {
		if m != "WATCHDOG=1" {
			t.Fatalf("got %q", m)
		}
	}
	for range 3 {
		if m := sd.next(t); m != "HUNG" {
			t.Fatalf("fed the watchdog while the server hung: %q", m)
		}
	}
	hung.Store(false)
	close(release)
	for m := sd.next(t); m != "WATCHDOG=1"; m = sd.next(t) {
		if m != "HUNG" {
			t.Fatalf("got %q", m)
		}
	}
	cancel()
	hangs.Wait()
}

func port(t *testing.T, addr string) string {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestNoSystemd: outside a Type=notify unit nothing runs.
func TestNoSystemd(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	if d := Start(context.Background(), func(context.Context) error { return nil }, nil); d != nil {
		t.Fatal("a Dog without NOTIFY_SOCKET")
	}
	var d *Dog
	d.Watch(nil) // a nil Dog is safe to use
}

// TestWithoutWatchdogSec: Type=notify without WatchdogSec gets READY=1
// and STOPPING=1, no WATCHDOG=1.
func TestWithoutWatchdogSec(t *testing.T) {
	sd := listenNotify(t, 0)
	ctx, cancel := context.WithCancel(context.Background())
	Start(ctx, func(context.Context) error { return nil }, slog.New(slog.DiscardHandler))
	if m := sd.next(t); m != "READY=1" {
		t.Fatalf("got %q", m)
	}
	cancel()
	if m := sd.next(t); m != "STOPPING=1" {
		t.Fatalf("got %q, want STOPPING=1 and no WATCHDOG=1", m)
	}
}
