//go:build faults

package faults

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"syscall"
	"testing"
	"time"

	"masterorder/api/apitest"
	"masterorder/bench"
)

// `masterorder bench --closed-loop` without --url: it writes a cluster
// with init, starts three real nodes (Raft over mutual TLS), opens its
// sessions, runs the closed loop, reads each node's /proc figures, and
// stops every node it started.
func TestClosedLoopOnLocalNodes(t *testing.T) {
	cfg := bench.DefaultConfig()
	cfg.ClosedLoop = true
	cfg.Binary = binary
	cfg.Concurrency = 8
	// The burst window (1 s) must never bind: at a few hundred orders/s a
	// session comes round every ten seconds or more.
	cfg.Sessions = 3000
	cfg.Warmup = time.Second
	cfg.Duration = 4 * time.Second
	cfg.DataDir = t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cfg.Transport = func(rt http.RoundTripper) http.RoundTripper { return apitest.Wrap(t, rt) }
	rep, err := bench.RunClosedLoop(ctx, cfg)
	if err != nil {
		t.Fatalf("RunClosedLoop: %v", err)
	}
	var text bytes.Buffer
	rep.WriteText(&text)
	t.Log(text.String())
	if !rep.LocalNodes || rep.Orders == 0 || !rep.OK() {
		t.Fatalf("local %v, orders %d, replays %d, duplicates %v", rep.LocalNodes, rep.Orders, rep.Replays, rep.DuplicateOrderIDs)
	}
	for reason, n := range rep.Rejections {
		// Only a busy machine's transient answers are acceptable.
		if reason != "NETWORK_ERROR" && reason != "NO_QUORUM" {
			t.Errorf("rejected %d× %s: fresh phones at many sessions should never be", n, reason)
		}
	}
	if len(rep.Nodes) != 3 {
		t.Fatalf("nodes %+v", rep.Nodes)
	}
	leaders := 0
	for _, n := range rep.Nodes {
		if n.Source != "proc" || n.PID == 0 || n.PeakRSSBytes < 1<<20 || n.WrittenBytes < 0 || n.CPUSeconds <= 0 {
			t.Errorf("node figures %+v", n)
		}
		// Every node writes its log and times it; the leader times its
		// commits.
		if n.LogWritesPerSecond <= 0 || n.EntriesPerLogWrite <= 0 || n.LogWriteMillis <= 0 || n.CommitMillis < 0 {
			t.Errorf("node's Raft figures %+v", n)
		}
		if n.CommitMillis > 0 {
			leaders++
		}
		// Stopped by the bench: the process is gone.
		if err := syscall.Kill(n.PID, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("node pid %d still running after the bench (%v)", n.PID, err)
		}
	}
	if leaders == 0 {
		t.Errorf("no node timed its commits as leader:\n%s", text.String())
	}
	if _, err := os.Stat(cfg.DataDir + "/a.toml"); err != nil {
		t.Errorf("--data-dir not used: %v", err)
	}
}
