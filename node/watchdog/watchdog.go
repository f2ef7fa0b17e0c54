// Package watchdog tells systemd that the box serves (READY=1) and feeds
// the unit's watchdog (WATCHDOG=1, WatchdogSec= in the unit) only while a
// self-check passes: a stopped (SIGSTOP), deadlocked or wedged process
// stops feeding, and systemd kills and restarts it. Outside systemd (no
// NOTIFY_SOCKET) it does nothing.
package watchdog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
)

// Check reports whether the process really serves now; ctx bounds it.
type Check func(ctx context.Context) error

// untilReady is how often the check runs before it first passes (READY=1
// is sent at the first pass; the HTTP server is up within moments).
const untilReady = 250 * time.Millisecond

// Dog runs the check and speaks to systemd; a nil Dog does nothing.
type Dog struct {
	log      *slog.Logger
	interval time.Duration // between checks once ready (0: no watchdog)

	mu    sync.Mutex
	check Check
}

// Start runs check in the background until ctx ends: READY=1 when it
// first passes, then, when the unit has WatchdogSec=, WATCHDOG=1 after
// every passing check, one every third of WatchdogSec (a check may take
// up to that long: two may fail or run slow before systemd acts).
// STOPPING=1 is sent when ctx ends. Without NOTIFY_SOCKET it returns nil.
func Start(ctx context.Context, check Check, log *slog.Logger) *Dog {
	if log == nil {
		log = slog.Default()
	}
	if os.Getenv("NOTIFY_SOCKET") == "" {
		return nil
	}
	timeout, err := daemon.SdWatchdogEnabled(false)
	if err != nil {
		log.Warn("watchdog: the unit's WatchdogSec cannot be read; not feeding it", "error", err)
	}
	d := &Dog{log: log, interval: timeout / 3, check: check}
	go d.run(ctx)
	return d
}

// Watch replaces the check (a box in setup mode turning into a member).
func (d *Dog) Watch(check Check) {
	if d == nil {
		return
	}
	d.mu.Lock()
	d.check = check
	d.mu.Unlock()
}

func (d *Dog) run(ctx context.Context) {
	ready := false
	failing := false
	wait := untilReady
	for {
		select {
		case <-ctx.Done():
			d.notify(daemon.SdNotifyStopping)
			return
		case <-time.After(wait):
		}
		err := d.runCheck(ctx)
		if ctx.Err() != nil {
			continue
		}
		switch {
		case err != nil && ready && !failing:
			// Once per spell: the line the journal keeps before systemd
			// kills the process says why it stopped feeding.
			d.log.Warn("watchdog: the self-check failed; not feeding the unit's watchdog", "error", err)
			failing = true
		case err != nil:
		case !ready:
			ready = true
			d.notify(daemon.SdNotifyReady)
			if d.interval <= 0 {
				// No WatchdogSec: nothing more to tell until the stop.
				<-ctx.Done()
				d.notify(daemon.SdNotifyStopping)
				return
			}
			d.notify(daemon.SdNotifyWatchdog)
		default:
			if failing {
				d.log.Info("watchdog: the self-check passes again")
				failing = false
			}
			d.notify(daemon.SdNotifyWatchdog)
		}
		if ready {
			wait = d.interval
		}
	}
}

func (d *Dog) runCheck(ctx context.Context) error {
	d.mu.Lock()
	check := d.check
	d.mu.Unlock()
	if check == nil {
		return errors.New("no self-check yet")
	}
	limit := d.interval
	if limit <= 0 {
		limit = 5 * time.Second
	}
	cctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	return check(cctx)
}

func (d *Dog) notify(state string) {
	if _, err := daemon.SdNotify(false, state); err != nil {
		d.log.Warn("watchdog: cannot tell systemd", "state", state, "error", err)
	}
}

// HTTP checks that the HTTP server at addr (as configured: ":80",
// "0.0.0.0:8080", "192.168.1.10:8080") answers GET path with 200. An
// unspecified host is asked on loopback, so the check never leaves the box.
func HTTP(addr, path string) Check {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return func(context.Context) error { return fmt.Errorf("http address %q: %w", addr, err) }
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1" // a wildcard listener ("[::]" too) takes IPv4
	}
	url := "http://" + net.JoinHostPort(host, port) + path
	// Its own client, no keep-alive: each check dials, so a server that
	// stopped accepting connections fails it.
	client := &http.Client{
		Transport:     &http.Transport{DisableKeepAlives: true, Proxy: nil},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		return nil
	}
}
