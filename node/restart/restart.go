// Package restart tells why a box last started: what the owner reads on
// the console's Boxes page ("restarted at 14:02 after it stopped
// answering").
//
// Each start of a node marks its run in the data directory (run.json).
// How the run ended is recorded beside it (stop.json): by the process
// itself when it stops cleanly or gives up (Run.Stopped), and by systemd,
// whose ExecStopPost runs `masterorder stopped` with the unit's result
// ($SERVICE_RESULT, $EXIT_CODE, $EXIT_STATUS: the watchdog, a signal, an
// exit status; RecordSystemdStop). The next start reads both (Begin). A
// run whose end nobody recorded was cut short before the process or
// systemd could say a word: a power cut, a frozen system reset by the
// hardware watchdog, or a kernel crash when the system booted since
// (its boot id changed); a kill outside systemd otherwise.
package restart

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Reasons (the status's lastRestart.reason).
const (
	// Stop: a clean stop (systemctl stop or restart, an upgrade, a
	// shutdown of the system).
	Stop = "stop"
	// Watchdog: the unit's watchdog: the process stopped answering.
	Watchdog = "watchdog"
	// Crash: a panic or a fatal signal (SIGSEGV, SIGABRT, …).
	Crash = "crash"
	// Error: the process exited with an error (a card that refuses
	// writes for good, a bad config).
	Error = "error"
	// Killed: a signal from outside (SIGKILL, SIGTERM not handled).
	Killed = "killed"
	// OutOfMemory: the kernel's out-of-memory killer.
	OutOfMemory = "oom"
	// Timeout: the start or the stop took longer than the unit allows.
	Timeout = "timeout"
	// Power: nothing recorded the end and the system booted since: a power
	// cut, a frozen system reset by the hardware watchdog, a kernel crash.
	Power = "power"
	// Unknown: nothing recorded the end, the system did not boot since
	// (a kill -9 outside systemd, or a run without a unit).
	Unknown = "unknown"
)

// Files in the data directory.
const (
	runFile  = "run.json"
	stopFile = "stop.json"
)

// Record is why this run started; a zero Reason: the first start on this
// data directory (nothing to tell).
type Record struct {
	Reason string `json:"reason"`
	// At is when this run started, on this box's wall clock.
	At time.Time `json:"at"`
	// StoppedAt is when the previous run's end was recorded (absent when
	// nobody recorded it).
	StoppedAt *time.Time `json:"stoppedAt,omitempty"`
	// Rebooted: the system booted between the two runs.
	Rebooted bool `json:"rebooted"`
	// Detail is the process's own words about its end (a fatal error).
	Detail string `json:"detail,omitempty"`
	// systemd's words about the previous run's end (ExecStopPost).
	ServiceResult string `json:"serviceResult,omitempty"`
	ExitCode      string `json:"exitCode,omitempty"`
	ExitStatus    string `json:"exitStatus,omitempty"`
}

// run is run.json: this run, as the next start will read it.
type run struct {
	ID         string    `json:"id"`
	StartedAt  time.Time `json:"startedAt"`
	BootID     string    `json:"bootId"`
	Invocation string    `json:"invocation,omitempty"` // systemd's $INVOCATION_ID
	PID        int       `json:"pid"`
}

// stop is stop.json: how a run ended.
type stop struct {
	RunID  string    `json:"runId"`
	At     time.Time `json:"at"`
	Reason string    `json:"reason,omitempty"` // the process's own: stop or error
	Detail string    `json:"detail,omitempty"`

	ServiceResult string `json:"serviceResult,omitempty"`
	ExitCode      string `json:"exitCode,omitempty"`
	ExitStatus    string `json:"exitStatus,omitempty"`
}

// Run is this run's mark; its zero value records nothing.
type Run struct {
	dir string
	id  string
}

// Begin reads what the previous run left in dir, marks this run (durably:
// a power cut a moment later must still find it) and returns why this run
// started. bootID is the system's boot id (BootID), invocation systemd's
// $INVOCATION_ID ("" outside a unit).
func Begin(dir string, now time.Time, bootID, invocation string) (Record, Run, error) {
	var prev run
	hadPrev, err := readJSON(filepath.Join(dir, runFile), &prev)
	if err != nil {
		return Record{}, Run{}, err
	}
	var st stop
	hadStop, err := readJSON(filepath.Join(dir, stopFile), &st)
	if err != nil {
		return Record{}, Run{}, err
	}
	rec := Record{At: now}
	if hadPrev {
		rec = judge(prev, st, hadStop && st.RunID == prev.ID, bootID)
		rec.At = now
	}
	id, err := newID()
	if err != nil {
		return Record{}, Run{}, err
	}
	cur := run{ID: id, StartedAt: now, BootID: bootID, Invocation: invocation, PID: os.Getpid()}
	if err := writeJSON(dir, runFile, cur); err != nil {
		return Record{}, Run{}, err
	}
	return rec, Run{dir: dir, id: id}, nil
}

// judge tells why the run after prev started.
func judge(prev run, st stop, ended bool, bootID string) Record {
	rec := Record{Rebooted: prev.BootID != "" && bootID != "" && prev.BootID != bootID}
	if !ended {
		rec.Reason = Unknown
		if rec.Rebooted {
			rec.Reason = Power
		}
		return rec
	}
	at := st.At
	rec.StoppedAt = &at
	rec.Detail, rec.ServiceResult, rec.ExitCode, rec.ExitStatus = st.Detail, st.ServiceResult, st.ExitCode, st.ExitStatus
	rec.Reason = st.Reason
	if st.ServiceResult != "" {
		rec.Reason = fromSystemd(st.ServiceResult, st.ExitStatus)
		if rec.Reason == Stop && st.Reason == Error {
			rec.Reason = Error // the process gave up, yet exited 0
		}
	}
	if rec.Reason == "" {
		rec.Reason = Unknown
	}
	return rec
}

// fromSystemd maps systemd's $SERVICE_RESULT (and $EXIT_STATUS, a signal's
// name for a process killed by one) to a reason (systemd.exec(5)).
func fromSystemd(result, exitStatus string) string {
	switch result {
	case "success":
		return Stop
	case "watchdog":
		return Watchdog
	case "oom-kill":
		return OutOfMemory
	case "timeout":
		return Timeout
	case "core-dump":
		return Crash
	case "signal":
		switch strings.TrimPrefix(exitStatus, "SIG") {
		case "KILL", "TERM", "INT", "HUP", "PIPE", "USR1", "USR2":
			return Killed
		}
		return Crash
	case "exit-code", "protocol", "resources", "start-limit-hit", "exec-condition":
		return Error
	}
	return Unknown
}

// Stopped records this run's own end: reason Stop for a clean stop, Error
// with the error's words when the process gives up. systemd's record
// (RecordSystemdStop), written after the process exits, keeps them.
func (r Run) Stopped(now time.Time, reason, detail string) error {
	if r.dir == "" {
		return nil
	}
	return writeJSON(r.dir, stopFile, stop{RunID: r.id, At: now, Reason: reason, Detail: detail})
}

// RecordSystemdStop is ExecStopPost's part (`masterorder stopped`): it
// adds systemd's words about how the run in dir ended. getenv reads the
// unit's environment. An invocation of the unit that never started a
// node (a bad config, setup mode) leaves the record alone: the last run's
// end stays what it was.
func RecordSystemdStop(dir string, now time.Time, getenv func(string) string) error {
	var cur run
	ok, err := readJSON(filepath.Join(dir, runFile), &cur)
	if err != nil || !ok {
		return err
	}
	if inv := getenv("INVOCATION_ID"); inv == "" || inv != cur.Invocation {
		return nil
	}
	var st stop
	had, err := readJSON(filepath.Join(dir, stopFile), &st)
	if err != nil {
		return err
	}
	if !had || st.RunID != cur.ID {
		st = stop{RunID: cur.ID, At: now}
	}
	st.ServiceResult, st.ExitCode, st.ExitStatus = getenv("SERVICE_RESULT"), getenv("EXIT_CODE"), getenv("EXIT_STATUS")
	if st.ServiceResult == "" {
		return errors.New("no $SERVICE_RESULT: run it as the unit's ExecStopPost")
	}
	return writeJSON(dir, stopFile, st)
}

// BootID is the system's boot id ("" where the kernel does not tell).
func BootID(sysRoot string) string {
	b, err := os.ReadFile(filepath.Join(sysRoot, "proc", "sys", "kernel", "random", "boot_id"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func newID() (string, error) {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// readJSON reads path into v; false when there is no such file. A file
// that does not parse (torn by a power cut on an old kernel) counts as
// absent.
func readJSON(path string, v any) (bool, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if json.Unmarshal(b, v) != nil {
		return false, nil
	}
	return true, nil
}

// writeJSON replaces dir/name durably: a temporary file, fsync, rename,
// fsync of the directory.
func writeJSON(dir, name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+name+"-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o640); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
