//go:build faults

package faults

import (
	"context"
	"database/sql"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"masterorder/bench"
)

// snappy makes Raft snapshot all the time and keep few entries behind a
// snapshot, so a restarted follower is often caught up by InstallSnapshot
// and a SIGKILL often lands while a snapshot is being written or restored.
var snappy = map[string]any{
	"snapshot_threshold": 16,
	"snapshot_interval":  "500ms",
	"trailing_logs":      8,
}

const rebuildLine = "fsm files are behind the snapshot or disagree"

// TestCrashConsistency SIGKILLs a follower ten times during a storm, at
// random 50–500 ms offsets: every other time right after it starts (while
// it replays its log, restores or installs a snapshot), otherwise once it
// has caught up (while it applies live batches and writes snapshots). The
// cluster must converge to identical state with nothing duplicated or lost.
func TestCrashConsistency(t *testing.T) {
	c := newCluster(t, clusterOpts{raft: snappy, logLevel: "debug"})
	sctx, stopStreams := context.WithCancel(context.Background())
	defer stopStreams()
	ws := c.watchStreams(sctx)
	waitStreamsStarted(t, ws)
	cfg := stormConfig(c, 30*time.Second)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	victim := ""
	rep := storm(t, c, cfg, func() {
		victim = faultFollower(t, c, rng, 10, 30*time.Second, "SIGKILL", c.kill)
	})
	c.checkReport(rep)
	orders := c.checkState(rep)
	c.checkStreams(ws, orders, rep)
	stopStreams()
	c.compareDumps()
	t.Logf("victim %s: %d starts, %d rebuilds of disagreeing/behind FSM files, %d snapshot restores at start, %d remote snapshots installed, %d snapshots taken",
		victim, c.logCount(victim, `"fault-suite":"start`), c.logCount(victim, rebuildLine),
		c.logCount(victim, "restored from snapshot"), c.logCount(victim, "Installed remote snapshot"),
		c.logCount(victim, "snapshot complete up to"))
}

// TestRebuildFromDisagreeingFiles forces the path a crash between the two
// FSM commits takes: on a stopped follower, the SQLite file's applied index
// is rewound (files disagree), and on the other the bbolt file is deleted
// (a lost file). Each must notice at start, rebuild from snapshot and log,
// and end identical to the others.
func TestRebuildFromDisagreeingFiles(t *testing.T) {
	c, rep := settledCluster(t)
	l := c.waitLeader(10 * time.Second)
	f := c.followers(l)

	damage := []struct {
		what string
		do   func(fsmDir string)
	}{
		{"rewind the SQLite applied index by 3", func(dir string) {
			db, err := sql.Open("sqlite", filepath.Join(dir, "domain.sqlite"))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			res, err := db.Exec(`UPDATE _fsm_meta SET v = v - 3 WHERE k = 'applied'`)
			if err != nil {
				t.Fatalf("rewind: %v", err)
			}
			if n, _ := res.RowsAffected(); n != 1 {
				t.Fatalf("rewind: %d rows", n)
			}
		}},
		{"delete the bbolt file", func(dir string) {
			if err := os.Remove(filepath.Join(dir, "fsm.bolt")); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for i, d := range damage {
		id := f[i]
		c.stop(id)
		before := c.logCount(id, rebuildLine)
		t.Logf("%s: %s", id, d.what)
		d.do(filepath.Join(c.nodes[id].dataDir, "fsm"))
		c.start(id)
		c.waitReady(id, 60*time.Second)
		if got := c.logCount(id, rebuildLine); got != before+1 {
			t.Errorf("%s did not log a rebuild after %s (log tail:\n%s)", id, d.what, c.logTail(id, 10))
		}
		// More orders after the rebuild, through the rebuilt node too.
		moreOrders(t, c)
	}
	c.checkState(rep)
	c.compareDumps()
}

// faultFollower takes one follower down rounds times (down, then a restart
// 300–2500 ms later), at random 50–500 ms offsets: every other time right
// after it started (while it replays its log, restores or installs a
// snapshot), otherwise once it is ready. It waits up to wait for it to be
// ready (half of that for a leader, a minute at the end) and returns the
// follower it chose.
func faultFollower(t *testing.T, c *cluster, rng *rand.Rand, rounds int, wait time.Duration, what string, down func(id string)) string {
	t.Helper()
	victim := ""
	for i := range rounds {
		l := c.waitLeader(wait / 2)
		if victim == "" || victim == l {
			victim = c.followers(l)[0]
		}
		offset := time.Duration(50+rng.IntN(451)) * time.Millisecond
		if i%2 == 0 {
			c.waitReady(victim, wait)
			time.Sleep(offset)
			t.Logf("%s %d: follower %s, %s after it was ready", what, i+1, victim, offset)
		} else {
			time.Sleep(offset)
			t.Logf("%s %d: follower %s, %s after its start", what, i+1, victim, offset)
		}
		down(victim)
		// Down long enough, often, that the leader has compacted the
		// entries it needs: it then gets a snapshot sent.
		time.Sleep(time.Duration(300+rng.IntN(2200)) * time.Millisecond)
		c.start(victim)
	}
	c.waitReady(victim, 60*time.Second)
	return victim
}

// moreOrders runs a short, fault-free storm on every node and checks it:
// the orders after a repair.
func moreOrders(t *testing.T, c *cluster) {
	t.Helper()
	more := stormConfig(c, 4*time.Second)
	more.Tables, more.GuestsPerTable = 4, 1
	more.DoubleTap, more.KeyChange, more.LostResponse = 0, 0, 0
	r := storm(t, c, more, func() {})
	c.checkReport(r)
	c.checkState(r)
}

// settledCluster is a snappy cluster that took a short storm of orders,
// checked and converged: the state a repair test damages.
func settledCluster(t *testing.T) (*cluster, *bench.Report) {
	t.Helper()
	c := newCluster(t, clusterOpts{raft: snappy})
	cfg := stormConfig(c, 8*time.Second)
	cfg.Tables, cfg.GuestsPerTable = 6, 2
	rep := storm(t, c, cfg, func() {})
	c.checkReport(rep)
	c.waitConverged(60 * time.Second)
	return c, rep
}
