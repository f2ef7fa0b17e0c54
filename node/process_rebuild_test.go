//go:build faults

package node_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"masterorder/orders"
)

// As a box on the store floor: every snapshot of a follower torn, its
// fsm/ gone, its log compacted, and the whole store down. Restarted alone
// it stays up (no crash loop), serves nothing and says why; SIGTERM stops
// it cleanly; restarted with a peer up it rebuilds from that peer, becomes
// ready, catches up and takes writes.
func TestProcessNoUsableSnapshotWaitsThenRebuilds(t *testing.T) {
	pc := initProcCluster(t)
	for _, id := range pc.ids {
		f, err := os.OpenFile(filepath.Join(pc.dir, id+".toml"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.WriteString("\n[raft]\nsnapshot_threshold = 64\ntrailing_logs = 32\nsnapshot_interval = \"100ms\"\n")
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		pc.start(id)
	}
	leader := pc.leader(60 * time.Second)
	token := pc.login(leader)
	for i := 0; i < 300; i++ {
		pc.putMenu(leader, token, fmt.Sprintf("m%03d", i), 100+i, 30*time.Second)
	}
	st, err := pc.status(leader)
	if err != nil {
		t.Fatal(err)
	}
	var follower, peer, third string
	for _, id := range pc.ids {
		switch {
		case id == leader:
		case follower == "":
			follower = id
		}
	}
	for _, id := range pc.ids {
		if id != follower && peer == "" {
			peer = id
		} else if id != follower {
			third = id
		}
	}
	pc.waitCaughtUp(follower, st.AppliedIndex, 60*time.Second)
	// Let the follower's snapshots settle, then the breaker trips.
	time.Sleep(500 * time.Millisecond)
	pc.killAll()
	// The box's whole file (node and domain settings); the node's part
	// names the files to ruin.
	file, err := orders.LoadConfig(filepath.Join(pc.dir, follower+".toml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := file.NodeConfig
	names := ruinSnapshots(t, cfg)

	pc.start(follower)
	logPath := filepath.Join(pc.dir, follower+".log")
	for deadline := time.Now().Add(60 * time.Second); ; {
		b, _ := os.ReadFile(logPath)
		if strings.Contains(string(b), "no peer gave a usable snapshot yet") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no waiting message from %s in 60 s:\n%s", follower, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if pc.ready(follower) {
		t.Fatal("the box is ready with no replica")
	}
	if _, err := pc.status(follower); err == nil {
		t.Fatal("the box serves HTTP while it waits for a peer")
	}
	took, err := pc.term(follower, 15*time.Second)
	if err != nil {
		t.Fatalf("SIGTERM while waiting for a peer: exit %v", err)
	}
	t.Logf("SIGTERM while waiting for a peer: clean exit after %v", took.Round(time.Millisecond))

	start := time.Now()
	pc.start(follower)
	pc.start(peer)
	pc.waitCaughtUp(follower, st.AppliedIndex, 90*time.Second)
	t.Logf("restart (with one peer starting beside it) to ready and caught up: %v", time.Since(start).Round(time.Millisecond))
	checkSetAside(t, cfg, names)
	pc.start(third)
	pc.putMenu(follower, pc.login(follower), "after", 1, 30*time.Second)
	final, err := pc.status(follower)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range pc.ids {
		pc.waitCaughtUp(id, final.AppliedIndex, 60*time.Second)
	}
}
