package restart

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

var t0 = time.Date(2026, 3, 2, 14, 0, 0, 0, time.UTC)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// TestFirstStart: nothing in the data directory, nothing to tell.
func TestFirstStart(t *testing.T) {
	rec, _, err := Begin(t.TempDir(), t0, "boot-1", "")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Reason != "" {
		t.Fatalf("first start: %+v", rec)
	}
}

// TestReasons: each way a run can end, as the next start reads it.
func TestReasons(t *testing.T) {
	type end struct {
		process, detail string            // Run.Stopped, "" for none
		systemd         map[string]string // ExecStopPost's environment, nil for none
	}
	unit := func(result, code, status string) map[string]string {
		return map[string]string{"SERVICE_RESULT": result, "EXIT_CODE": code, "EXIT_STATUS": status}
	}
	for _, tc := range []struct {
		name     string
		end      end
		nextBoot string
		want     string
		detail   string
	}{
		{name: "clean stop, no systemd", end: end{process: Stop}, want: Stop},
		{name: "clean stop under systemd", end: end{process: Stop, systemd: unit("success", "exited", "0")}, want: Stop},
		{name: "system shut down and booted", end: end{process: Stop, systemd: unit("success", "exited", "0")}, nextBoot: "boot-2", want: Stop},
		// Stopped and aborted by the watchdog (GOTRACEBACK=crash: the
		// abort ends by its signal), or killed when SIGSTOPped.
		{name: "watchdog abort", end: end{systemd: unit("watchdog", "dumped", "ABRT")}, want: Watchdog},
		{name: "watchdog kill of a stopped process", end: end{systemd: unit("watchdog", "killed", "KILL")}, want: Watchdog},
		{name: "panic", end: end{systemd: unit("core-dump", "dumped", "ABRT")}, want: Crash},
		{name: "segfault without a core", end: end{systemd: unit("signal", "killed", "SEGV")}, want: Crash},
		{name: "kill -9", end: end{systemd: unit("signal", "killed", "KILL")}, want: Killed},
		{name: "out of memory", end: end{systemd: unit("oom-kill", "killed", "KILL")}, want: OutOfMemory},
		{name: "start or stop timed out", end: end{systemd: unit("timeout", "killed", "KILL")}, want: Timeout},
		{name: "card gave up", end: end{process: Error, detail: "the memory card has refused writes for 2m0s",
			systemd: unit("exit-code", "exited", "1")}, want: Error, detail: "the memory card has refused writes for 2m0s"},
		{name: "gave up, no systemd", end: end{process: Error, detail: "card"}, want: Error, detail: "card"},
		{name: "power cut", end: end{}, nextBoot: "boot-2", want: Power},
		{name: "killed outside systemd", end: end{}, want: Unknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			inv := ""
			if tc.end.systemd != nil {
				inv = "inv-1"
			}
			_, r, err := Begin(dir, t0, "boot-1", inv)
			if err != nil {
				t.Fatal(err)
			}
			stoppedAt := t0.Add(time.Hour)
			if tc.end.process != "" {
				if err := r.Stopped(stoppedAt, tc.end.process, tc.end.detail); err != nil {
					t.Fatal(err)
				}
			}
			if tc.end.systemd != nil {
				e := map[string]string{"INVOCATION_ID": inv}
				for k, v := range tc.end.systemd {
					e[k] = v
				}
				if err := RecordSystemdStop(dir, stoppedAt.Add(time.Second), env(e)); err != nil {
					t.Fatal(err)
				}
			}
			boot := "boot-1"
			if tc.nextBoot != "" {
				boot = tc.nextBoot
			}
			next := t0.Add(2 * time.Hour)
			rec, _, err := Begin(dir, next, boot, "inv-2")
			if err != nil {
				t.Fatal(err)
			}
			if rec.Reason != tc.want || rec.Detail != tc.detail || !rec.At.Equal(next) || rec.Rebooted != (tc.nextBoot != "") {
				t.Fatalf("got %+v, want reason %q detail %q at %v", rec, tc.want, tc.detail, next)
			}
			if tc.end.process == "" && tc.end.systemd == nil {
				if rec.StoppedAt != nil {
					t.Fatalf("a stop time for an end nobody recorded: %v", rec.StoppedAt)
				}
			} else if rec.StoppedAt == nil || rec.StoppedAt.Before(stoppedAt) {
				t.Fatalf("stoppedAt %v, want the recorded end", rec.StoppedAt)
			}
			if tc.end.systemd != nil && (rec.ServiceResult != tc.end.systemd["SERVICE_RESULT"] ||
				rec.ExitCode != tc.end.systemd["EXIT_CODE"] || rec.ExitStatus != tc.end.systemd["EXIT_STATUS"]) {
				t.Fatalf("systemd's words lost: %+v", rec)
			}
		})
	}
}

// TestOnlyTheRunsOwnEnd: a later invocation of the unit that never started
// a node (a bad config) leaves the last run's end alone, and a stop.json of
// an older run does not explain a newer one.
func TestOnlyTheRunsOwnEnd(t *testing.T) {
	dir := t.TempDir()
	_, r, err := Begin(dir, t0, "b", "inv-1")
	if err != nil {
		t.Fatal(err)
	}
	r.Stopped(t0.Add(time.Minute), Stop, "")
	if err := RecordSystemdStop(dir, t0.Add(time.Minute), env(map[string]string{"INVOCATION_ID": "inv-1", "SERVICE_RESULT": "success"})); err != nil {
		t.Fatal(err)
	}
	// inv-2 exited 2 before its node started: nothing changes.
	if err := RecordSystemdStop(dir, t0.Add(2*time.Minute), env(map[string]string{"INVOCATION_ID": "inv-2", "SERVICE_RESULT": "exit-code", "EXIT_STATUS": "2"})); err != nil {
		t.Fatal(err)
	}
	rec, _, err := Begin(dir, t0.Add(3*time.Minute), "b", "inv-3")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Reason != Stop {
		t.Fatalf("got %+v, want the clean stop of inv-1", rec)
	}
	// inv-3's run ends unrecorded: inv-1's stop.json must not speak for it.
	rec, _, err = Begin(dir, t0.Add(4*time.Minute), "b", "inv-4")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Reason != Unknown {
		t.Fatalf("got %+v, want unknown", rec)
	}
}

// TestTornFiles: a file a power cut left unreadable counts as absent.
func TestTornFiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, runFile), []byte(`{"id":"x`), 0o600); err != nil {
		t.Fatal(err)
	}
	rec, _, err := Begin(dir, t0, "b", "")
	if err != nil || rec.Reason != "" {
		t.Fatalf("got %+v %v", rec, err)
	}
}

// TestNoSystemdEnvironment: `masterorder stopped` outside ExecStopPost
// says so and writes nothing.
func TestNoSystemdEnvironment(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := Begin(dir, t0, "b", "inv-1"); err != nil {
		t.Fatal(err)
	}
	if err := RecordSystemdStop(dir, t0, env(map[string]string{"INVOCATION_ID": "inv-1"})); err == nil {
		t.Fatal("no error without $SERVICE_RESULT")
	}
	if _, err := os.Stat(filepath.Join(dir, stopFile)); err == nil {
		t.Fatal("stop.json written")
	}
}

func TestBootID(t *testing.T) {
	root := t.TempDir()
	if BootID(root) != "" {
		t.Fatal("a boot id from nowhere")
	}
	p := filepath.Join(root, "proc", "sys", "kernel", "random")
	os.MkdirAll(p, 0o755)
	os.WriteFile(filepath.Join(p, "boot_id"), []byte("1234\n"), 0o644)
	if got := BootID(root); got != "1234" {
		t.Fatalf("got %q", got)
	}
}
