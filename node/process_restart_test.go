//go:build faults

package node_test

import (
	"encoding/json"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// The unit's side, with the real binary and no systemd: the process says
// READY=1 and feeds the watchdog on NOTIFY_SOCKET; stopped (SIGSTOP) and
// killed as systemd does when the watchdog fires, then `masterorder
// stopped` run as ExecStopPost with the unit's result, the restarted box
// reports "watchdog" in the cluster's status; a kill -9 with no
// ExecStopPost reads "unknown" (same boot), a SIGTERM "stop".
//
//	go test -tags faults -count=1 -run TestProcessWatchdogAndLastRestart -v ./node/
func TestProcessWatchdogAndLastRestart(t *testing.T) {
	pc := startProcCluster(t)
	pc.leader(30 * time.Second)
	const id = "c"
	pc.kill(id)

	sock := filepath.Join(t.TempDir(), "n")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	read := func() string {
		t.Helper()
		buf := make([]byte, 4096)
		conn.SetReadDeadline(time.Now().Add(time.Minute))
		n, err := conn.Read(buf)
		if err != nil {
			t.Fatalf("notify socket: %v", err)
		}
		return string(buf[:n])
	}
	const inv = "11111111111111111111111111111111"
	pc.startEnv(id, []string{"NOTIFY_SOCKET=" + sock, "WATCHDOG_USEC=600000", "INVOCATION_ID=" + inv})
	if m := read(); m != "READY=1" {
		t.Fatalf("first message %q, want READY=1", m)
	}
	if _, err := pc.status(id); err != nil {
		t.Fatalf("READY=1, yet the box does not answer: %v", err)
	}
	for range 3 {
		if m := read(); m != "WATCHDOG=1" {
			t.Fatalf("got %q, want WATCHDOG=1", m)
		}
	}

	// The watchdog fires on a stopped process: SIGABRT stays pending, the
	// abort times out, systemd kills it; then its ExecStopPost.
	pid := pc.pid(id)
	syscall.Kill(pid, syscall.SIGSTOP)
	pc.kill(id)
	stopped := exec.Command(pc.bin, "stopped", "--config", filepath.Join(pc.dir, id+".toml"))
	stopped.Env = []string{"INVOCATION_ID=" + inv, "SERVICE_RESULT=watchdog", "EXIT_CODE=killed", "EXIT_STATUS=KILL"}
	if out, err := stopped.CombinedOutput(); err != nil {
		t.Fatalf("masterorder stopped: %v %s", err, out)
	}
	pc.startEnv(id, []string{"INVOCATION_ID=22222222222222222222222222222222"})
	seen := pc.waitLastRestart(id, "watchdog", "watchdog", time.Time{})

	pc.kill(id)
	pc.start(id)
	// Not the "unknown" of the kill that began the test, which a box that
	// has not yet heard of the watchdog restart still reports.
	seen = pc.waitLastRestart(id, "unknown", "", seen)

	syscall.Kill(pc.pid(id), syscall.SIGTERM)
	pc.mu.Lock()
	cmd := pc.procs[id]
	delete(pc.procs, id)
	pc.mu.Unlock()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
	pc.start(id)
	pc.waitLastRestart(id, "stop", "", seen)
}

// waitLastRestart waits until another box's status says box id last
// started for reason (with systemd's result, when given), at or after
// notBefore (the time of the restart seen before, to the second), and
// returns that time.
func (pc *procCluster) waitLastRestart(id, reason, serviceResult string, notBefore time.Time) time.Time {
	pc.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		for _, other := range pc.ids {
			if other == id || pc.pid(other) == 0 {
				continue
			}
			var st struct {
				Nodes []struct {
					ID          string `json:"id"`
					LastRestart *struct {
						Reason        string `json:"reason"`
						At            string `json:"at"`
						ServiceResult string `json:"serviceResult"`
					} `json:"lastRestart"`
				} `json:"nodes"`
			}
			resp, err := pc.cli.Get("http://" + pc.http[other] + "/api/cluster/status")
			if err != nil {
				continue
			}
			err = json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK {
				continue
			}
			for _, n := range st.Nodes {
				if n.ID == id && n.LastRestart != nil {
					last = n.LastRestart.Reason + "/" + n.LastRestart.ServiceResult
					at, err := time.Parse(time.RFC3339, n.LastRestart.At)
					if n.LastRestart.Reason == reason && n.LastRestart.ServiceResult == serviceResult && err == nil && !at.Before(notBefore) {
						pc.t.Logf("box %s as %s reports it: last restart %s at %s", id, other, last, n.LastRestart.At)
						return at
					}
				}
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	pc.t.Fatalf("box %s: last restart %q, want %s/%s", id, last, reason, serviceResult)
	return time.Time{}
}
