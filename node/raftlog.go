package node

import (
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// While a box is dead, hashicorp/raft on the leader logs "failed to
// heartbeat to" that peer about five times a second (its backoff is capped
// at half the heartbeat timeout), and "failed to appendEntries to" and,
// in an election, "failed to make requestVote RPC" as often: half a
// million lines a day in a persistent journal on an SD card until the box
// is replaced. Raft's lines about one peer therefore pass once a minute
// per (message, peer), the first after a minute saying how many were
// left out meanwhile ("repeats").

// peerLogWindow is how often one line about one peer is logged.
const peerLogWindow = time.Minute

// peerLogKeys bounds the throttle's memory (a few peers × a few messages
// in practice); past it the throttle starts over.
const peerLogKeys = 256

// peerLogThrottle keeps one logThrottle per (message, peer).
type peerLogThrottle struct {
	now func() time.Time // nil: time.Now

	mu    sync.Mutex
	byKey map[string]*logThrottle
}

// pass reports whether a line msg with args is logged now, and with what
// args (the suppressed count appended). Lines that name no peer pass.
func (p *peerLogThrottle) pass(msg string, args []any) (bool, []any) {
	peer, ok := peerOf(args)
	if !ok {
		return true, args
	}
	key := msg + "\x00" + peer
	p.mu.Lock()
	if p.byKey == nil || len(p.byKey) >= peerLogKeys {
		p.byKey = map[string]*logThrottle{}
	}
	th := p.byKey[key]
	if th == nil {
		th = &logThrottle{window: peerLogWindow, burst: 1}
		p.byKey[key] = th
	}
	p.mu.Unlock()
	now := time.Now
	if p.now != nil {
		now = p.now
	}
	ok, dropped := th.allow(now())
	if !ok {
		return false, nil
	}
	if dropped > 0 {
		args = append(args[:len(args):len(args)], "repeats", dropped, "repeats_within", peerLogWindow.String())
	}
	return true, args
}

// peerOf finds the peer a Raft line is about: "peer" (replication) or
// "target" (vote requests), as text.
func peerOf(args []any) (string, bool) {
	for i := 0; i+1 < len(args); i += 2 {
		if k, _ := args[i].(string); k == "peer" || k == "target" {
			return fmt.Sprint(args[i+1]), true
		}
	}
	return "", false
}

// throttledLogger is an hclog.Logger whose lines about a peer pass through
// a peerLogThrottle (shared with the loggers it derives).
type throttledLogger struct {
	hclog.Logger
	t *peerLogThrottle
}

func (l throttledLogger) Log(level hclog.Level, msg string, args ...any) {
	if ok, args := l.t.pass(msg, args); ok {
		l.Logger.Log(level, msg, args...)
	}
}

func (l throttledLogger) Trace(msg string, args ...any) { l.Log(hclog.Trace, msg, args...) }
func (l throttledLogger) Debug(msg string, args ...any) { l.Log(hclog.Debug, msg, args...) }
func (l throttledLogger) Info(msg string, args ...any)  { l.Log(hclog.Info, msg, args...) }
func (l throttledLogger) Warn(msg string, args ...any)  { l.Log(hclog.Warn, msg, args...) }
func (l throttledLogger) Error(msg string, args ...any) { l.Log(hclog.Error, msg, args...) }

func (l throttledLogger) With(args ...any) hclog.Logger {
	return throttledLogger{l.Logger.With(args...), l.t}
}

func (l throttledLogger) Named(name string) hclog.Logger {
	return throttledLogger{l.Logger.Named(name), l.t}
}

func (l throttledLogger) ResetNamed(name string) hclog.Logger {
	return throttledLogger{l.Logger.ResetNamed(name), l.t}
}
