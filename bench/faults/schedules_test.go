//go:build faults

package faults

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"masterorder/api/apitest"
	"masterorder/bench"
)

// stormDuration bounds the order phase of every storm.
const stormDuration = 20 * time.Second

// startSignal is the bench's progress writer: its first write (one second
// into the order phase) closes ch.
type startSignal struct {
	once sync.Once
	ch   chan struct{}
}

func (s *startSignal) Write(p []byte) (int, error) {
	s.once.Do(func() { close(s.ch) })
	return len(p), nil
}

// stormConfig is the moderate lunch peak of every schedule: 12 tables × 3
// guests ordering until the duration is over, with a fifth of the orders
// double-tapped, re-tapped with a new key, or losing their response.
func stormConfig(c *cluster, d time.Duration) bench.Config {
	return bench.Config{
		URLs: c.urls(), Tables: 12, GuestsPerTable: 3, Duration: d,
		DoubleTap: 0.2, KeyChange: 0.2, LostResponse: 0.2,
		StaffPassword: staffPassword, RequestTimeout: 10 * time.Second,
	}
}

// storm runs the bench against the cluster; during it (from one second
// into the order phase) fault runs on the test goroutine. It returns the
// report once the bench has finished and verified.
func storm(t *testing.T, c *cluster, cfg bench.Config, fault func()) *bench.Report {
	t.Helper()
	sig := &startSignal{ch: make(chan struct{})}
	cfg.Progress = sig
	cfg.Transport = func(rt http.RoundTripper) http.RoundTripper { return apitest.Wrap(t, rt) }
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Duration+3*time.Minute)
	defer cancel()
	var rep *bench.Report
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		rep, err = bench.Run(ctx, cfg)
	}()
	select {
	case <-sig.ch:
		fault()
	case <-done:
	}
	<-done
	if err != nil {
		t.Fatalf("bench: %v", err)
	}
	return rep
}

// waitStreamsStarted waits until every node's kitchen stream has sent its
// first snapshot.
func waitStreamsStarted(t *testing.T, ws map[string]*streamWatcher) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for _, w := range ws {
		for {
			w.mu.Lock()
			ok := len(w.segs) > 0 && w.segs[0].snap != nil
			w.mu.Unlock()
			if ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("kitchen stream of %s never started", w.id)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// runSchedule starts a fresh proxied cluster on the plain disk (the
// power-cut filesystem has schedules of its own in TestPowerCuts), watches every node's kitchen stream, runs a storm with fault in it,
// heals, and checks everything.
func runSchedule(t *testing.T, fault func(t *testing.T, c *cluster)) {
	c := newCluster(t, clusterOpts{proxies: true})
	sctx, stopStreams := context.WithCancel(context.Background())
	defer stopStreams()
	ws := c.watchStreams(sctx)
	waitStreamsStarted(t, ws)
	rep := storm(t, c, stormConfig(c, stormDuration), func() { fault(t, c) })
	c.heal()
	for _, id := range c.ids {
		if !c.running(id) {
			t.Errorf("%s is not running after the schedule", id)
			c.start(id)
		}
	}
	c.checkReport(rep)
	orders := c.checkState(rep)
	c.checkStreams(ws, orders, rep)
	stopStreams()
	c.compareDumps()
}

func TestFaultSchedules(t *testing.T) {
	schedules := []struct {
		name  string
		fault func(t *testing.T, c *cluster)
	}{
		{"KillLeader", func(t *testing.T, c *cluster) {
			time.Sleep(3 * time.Second)
			l := c.waitLeader(10 * time.Second)
			t.Logf("SIGKILL leader %s", l)
			c.kill(l)
			nl := c.waitLeader(10 * time.Second)
			t.Logf("new leader %s", nl)
			time.Sleep(5 * time.Second)
			t.Logf("restart %s", l)
			c.start(l)
			c.waitReady(l, 30*time.Second)
		}},
		{"PartitionLeader", func(t *testing.T, c *cluster) {
			time.Sleep(3 * time.Second)
			l := c.waitLeader(10 * time.Second)
			t.Logf("partition leader %s from both followers", l)
			c.partition(l)
			time.Sleep(7 * time.Second)
			if s, err := c.status(l); err == nil && s.State == "leader" {
				t.Errorf("%s still calls itself leader 7 s into a partition", l)
			}
			if c.ready(l) {
				t.Errorf("%s answers /readyz 200 7 s into a partition", l)
			}
			if nl := c.leader(); nl == "" || nl == l {
				t.Errorf("no new leader on the majority side 7 s into the partition (got %q)", nl)
			}
			t.Log("heal")
			c.heal()
			c.waitReady(l, 30*time.Second)
		}},
		{"IsolateFollower", func(t *testing.T, c *cluster) {
			time.Sleep(3 * time.Second)
			l := c.waitLeader(10 * time.Second)
			f := c.followers(l)[0]
			t.Logf("isolate follower %s (leader %s)", f, l)
			c.partition(f)
			time.Sleep(7 * time.Second)
			t.Log("heal")
			c.heal()
			c.waitReady(f, 30*time.Second)
		}},
		{"LaggyLink", func(t *testing.T, c *cluster) {
			time.Sleep(3 * time.Second)
			l := c.waitLeader(10 * time.Second)
			f := c.followers(l)[0]
			t.Logf("200 ms latency on the link %s<->%s (each direction)", l, f)
			c.addToxic(l, f, "lag", "latency", map[string]any{"latency": 200})
			c.addToxic(f, l, "lag", "latency", map[string]any{"latency": 200})
			time.Sleep(10 * time.Second)
			t.Log("remove latency")
			c.heal()
		}},
		{"MajorityLoss", func(t *testing.T, c *cluster) {
			time.Sleep(3 * time.Second)
			l := c.waitLeader(10 * time.Second)
			f := c.followers(l)[0]
			t.Logf("SIGKILL leader %s, then follower %s: no quorum for 4 s", l, f)
			c.kill(l)
			time.Sleep(time.Second)
			c.kill(f)
			time.Sleep(4 * time.Second)
			t.Logf("restart %s and %s", l, f)
			c.start(l)
			c.start(f)
			c.waitReady(l, 30*time.Second)
			c.waitReady(f, 30*time.Second)
		}},
		{"LeaderAlone", func(t *testing.T, c *cluster) {
			time.Sleep(3 * time.Second)
			l := c.waitLeader(10 * time.Second)
			f := c.followers(l)
			t.Logf("SIGKILL both followers %v: leader %s alone for 6 s", f, l)
			c.kill(f[0])
			c.kill(f[1])
			time.Sleep(6 * time.Second)
			t.Logf("restart %v", f)
			c.start(f[0])
			c.start(f[1])
			c.waitReady(f[0], 30*time.Second)
			c.waitReady(f[1], 30*time.Second)
		}},
		{"RollingRestart", func(t *testing.T, c *cluster) {
			time.Sleep(2 * time.Second)
			for _, id := range c.ids {
				t.Logf("SIGTERM %s and restart it", id)
				c.stop(id)
				c.start(id)
				c.waitReady(id, 30*time.Second)
				time.Sleep(time.Second)
			}
		}},
	}
	for _, s := range schedules {
		t.Run(s.name, func(t *testing.T) { runSchedule(t, s.fault) })
	}
}
