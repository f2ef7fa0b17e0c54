//go:build faults

package node_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"masterorder/node/nodetest"
)

// term sends SIGTERM to node id and waits for its process to exit; it
// returns how long that took, or fails the test after limit.
func (pc *procCluster) term(id string, limit time.Duration) (time.Duration, error) {
	pc.t.Helper()
	pc.mu.Lock()
	cmd := pc.procs[id]
	pc.mu.Unlock()
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		pc.t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		pc.mu.Lock()
		delete(pc.procs, id)
		pc.mu.Unlock()
		return time.Since(start), err
	case <-time.After(limit):
		pc.t.Fatalf("node %s did not exit within %v of SIGTERM", id, limit)
		return 0, nil
	}
}

// A staff laptop starts a backup of a 20 MB store on the leader and goes
// to sleep after 64 KiB: writes through every box go on, and SIGTERM still
// stops the leader within 15 s.
func TestProcessSIGTERMWithStalledBackupReader(t *testing.T) {
	// 20 MB of state, made in-process and restored into every box.
	backup := filepath.Join(t.TempDir(), "20mb.mosnap")
	func() {
		c := nodetest.Start(t, 1, nil, nil, nil)
		defer c.StopAll()
		val := make([]byte, 100<<10)
		for i := range val {
			val[i] = byte('a' + i%26)
		}
		for i := 0; i < 200; i++ {
			if _, err := c.Nodes[0].KV().SetIfAbsent(context.Background(), fmt.Sprintf("filler:%03d", i), val, 0); err != nil {
				t.Fatal(err)
			}
		}
		f, err := os.Create(backup)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := c.Nodes[0].WriteBackup(context.Background(), f); err != nil {
			t.Fatal(err)
		}
	}()
	if st, err := os.Stat(backup); err != nil || st.Size() < 20<<20 {
		t.Fatalf("backup of the filled store: %v %v", st, err)
	}
	pc := initProcCluster(t)
	for _, id := range pc.ids {
		if out, err := exec.Command(pc.bin, "restore", "--in", backup, "--config", filepath.Join(pc.dir, id+".toml")).CombinedOutput(); err != nil {
			t.Fatalf("restore %s: %v\n%s", id, err, out)
		}
		pc.start(id)
	}
	leader := pc.leader(60 * time.Second)
	token := pc.login(leader)

	req, _ := http.NewRequest("GET", "http://"+pc.http[leader]+"/api/staff/backup", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := (&http.Client{Transport: &http.Transport{}}).Do(req)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("backup: %v %v", err, res)
	}
	defer res.Body.Close()
	if _, err := io.ReadFull(res.Body, make([]byte, 64<<10)); err != nil {
		t.Fatal(err)
	}
	// 30 s asleep: meanwhile writes through every box are acknowledged.
	writes := 0
	for start := time.Now(); time.Since(start) < 30*time.Second; writes++ {
		id := pc.ids[writes%3]
		pc.putMenu(id, pc.login(id), fmt.Sprintf("m%d", writes%50), 100+writes, 10*time.Second)
		time.Sleep(100 * time.Millisecond)
	}
	if entries, _ := os.ReadDir(filepath.Join(pc.dir, "data-"+leader, "fsm", "capture")); len(entries) < 1 {
		t.Fatalf("no snapshot copy while the stalled backup streams")
	}
	took, err := pc.term(leader, 15*time.Second)
	if err != nil {
		t.Fatalf("leader exited with %v after SIGTERM", err)
	}
	t.Logf("%d writes acknowledged through all boxes in 30 s beside the stalled reader; the leader exited %v after SIGTERM", writes, took.Round(time.Millisecond))
	// The others take over.
	next := pc.leader(30 * time.Second)
	pc.putMenu(next, pc.login(next), "after", 1, 30*time.Second)
}
