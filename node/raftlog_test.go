package node_test

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	bolt "go.etcd.io/bbolt"

	"masterorder/node"
	"masterorder/node/nodetest"
)

// TestRaftLogHasSmallPages: a Raft log this build creates has 1 KiB pages
// (node.go, raftLogPageSize: each batch's commit rewrites fewer disk pages),
// and survives a restart with its entries.
func TestRaftLogHasSmallPages(t *testing.T) {
	c := nodetest.Start(t, 1, nil, nil, nil)
	_, n := c.WaitLeader(10 * time.Second)
	for i := 0; i < 50; i++ {
		if _, err := n.KV().SetIfAbsent(context.Background(), fmt.Sprintf("lock:k%02d", i), make([]byte, 900), time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	c.StopNode(0)
	path := filepath.Join(c.Configs[0].DataDir, "raft", "raft.db")
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	size := db.Info().PageSize
	db.Close()
	if size != 1024 {
		t.Fatalf("raft.db has %d-byte pages, want 1024", size)
	}
	n = c.StartNode(0)
	c.WaitLeader(10 * time.Second)
	c.WaitConverged(10 * time.Second)
	if e, ok, err := n.KV().Get("lock:k49"); err != nil || !ok || len(e.Value) != 900 {
		t.Fatalf("after a restart: %v %v %d bytes", ok, err, len(e.Value))
	}
}

// lockedLines collects log output from several goroutines.
type lockedLines struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLines) count(parts ...string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
next:
	for _, line := range strings.Split(l.b.String(), "\n") {
		for _, p := range parts {
			if !strings.Contains(line, p) {
				continue next
			}
		}
		n++
	}
	return n
}

// TestDeadPeerLogsOnceAMinute: with a box dead, the leader's Raft fails
// its heartbeats to it several times a second; its log holds one such line
// (per message) for that peer, not one per failure.
func TestDeadPeerLogsOnceAMinute(t *testing.T) {
	var out lockedLines
	c := nodetest.Start(t, 3, nil, func(i int) node.Options {
		return node.Options{Logger: slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	}, nil)
	li, leader := c.WaitLeader(10 * time.Second)
	f := (li + 1) % 3
	dead := c.Configs[f].RaftAddr
	failed := make(chan raft.Observation, 256)
	obs := raft.NewObserver(failed, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.FailedHeartbeatObservation)
		return ok
	})
	leader.Raft().RegisterObserver(obs)
	defer leader.Raft().DeregisterObserver(obs)
	start := time.Now()
	c.StopNode(f)
	for n := 0; n < 10; n++ {
		select {
		case <-failed:
		case <-time.After(time.Minute):
			t.Fatalf("only %d failed heartbeats to the stopped box", n)
		}
	}
	if !leader.IsLeader() {
		t.Skip("leadership moved meanwhile (a busy machine); the count would mix two leaders' logs")
	}
	if time.Since(start) >= time.Minute {
		t.Skip("10 failed heartbeats took a minute: the throttle's window passed")
	}
	if n := out.count("failed to heartbeat to", dead); n != 1 {
		t.Fatalf("10 failed heartbeats to %s: %d lines, want 1", dead, n)
	}
}
