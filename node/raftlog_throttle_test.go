package node

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// lines are the lines holding every one of parts.
func (l *lockedBuffer) lines(parts ...string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
next:
	for _, line := range strings.Split(l.b.String(), "\n") {
		for _, p := range parts {
			if !strings.Contains(line, p) {
				continue next
			}
		}
		out = append(out, line)
	}
	return out
}

// Raft's lines about one peer pass once a minute per (message, peer), the
// next one with how many were left out; another peer, another message and
// lines about no peer are not held back by them.
func TestRaftLogThrottlePerPeer(t *testing.T) {
	var out lockedBuffer
	now := time.Date(2026, 3, 2, 14, 0, 0, 0, time.UTC)
	th := &peerLogThrottle{now: func() time.Time { return now }}
	log := hclog.Logger(throttledLogger{hclog.New(&hclog.LoggerOptions{Name: "a.raft", Output: &out, Level: hclog.Debug}), th})
	// raft derives loggers; they share the throttle.
	replication := log.With("component", "replication")

	const dead = "127.0.0.1:7002"
	refused := "dial tcp 127.0.0.1:7002: connect: connection refused"
	// 300 failed heartbeats to the dead box within one minute (raft's
	// backoff: about one every 200 ms), the last at the minute.
	for i := range 300 {
		now = time.Date(2026, 3, 2, 14, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Minute / 299)
		replication.Error("failed to heartbeat to", "peer", dead, "backoff time", 150*time.Millisecond, "error", refused)
		if i == 100 {
			// Another peer, another message to the same peer, and a
			// line about no peer: each logged.
			log.Error("failed to heartbeat to", "peer", "127.0.0.1:7003", "error", refused)
			log.Error("failed to appendEntries to", "peer", dead, "error", refused)
			log.Warn("heartbeat timeout reached, starting election", "last-leader-addr", "")
			log.Warn("heartbeat timeout reached, starting election", "last-leader-addr", "")
		}
	}
	got := out.lines("peer=" + dead)
	heartbeats := out.lines("failed to heartbeat to:", "peer="+dead)
	if len(heartbeats) > 2 || len(heartbeats) == 0 {
		t.Fatalf("%d lines for 300 failed heartbeats in a minute:\n%s", len(heartbeats), strings.Join(heartbeats, "\n"))
	}
	if len(heartbeats) != 2 || !strings.Contains(heartbeats[1], "repeats=298") || !strings.Contains(heartbeats[1], "repeats_within=1m0s") {
		t.Fatalf("the line after the minute does not say how many were left out:\n%s", strings.Join(heartbeats, "\n"))
	}
	if n := len(out.lines("failed to appendEntries to:", "peer="+dead)); n != 1 {
		t.Fatalf("another message to the same peer: %d lines, want 1\n%s", n, strings.Join(got, "\n"))
	}
	if n := len(out.lines("failed to heartbeat to:", "peer=127.0.0.1:7003")); n != 1 {
		t.Fatalf("another peer: %d lines, want 1", n)
	}
	if n := len(out.lines("starting election")); n != 2 {
		t.Fatalf("a line about no peer held back: %d lines, want 2", n)
	}
	// Vote requests name their peer as "target" (a raft.Server).
	type server struct{ ID, Address string }
	for range 10 {
		log.Error("failed to make requestVote RPC", "target", server{"c", dead}, "error", refused, "term", 7)
	}
	if n := len(out.lines("failed to make requestVote RPC")); n != 1 {
		t.Fatalf("10 vote requests to one peer: %d lines, want 1", n)
	}
}
