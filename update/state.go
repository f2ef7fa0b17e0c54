package update

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"masterorder/node/atomicfile"
)

// States of one box's update, as the console shows them.
const (
	StateIdle       = "idle"       // nothing under way
	StateReceiving  = "receiving"  // fetching the bundle from another box
	StateInstalling = "installing" // writing it into the other slot
	StateRebooting  = "rebooting"  // starting again into the new version
	StateTrial      = "trial"      // runs the new version, not yet committed
	StateCommitted  = "committed"  // runs the new version for good
	StateRolledBack = "rolledBack" // went back to its old version by itself
	StateFailed     = "failed"     // refused or failed before the restart; still on its old version
)

// Reason codes of an update that did not finish (httpapi's table).
const (
	CodeRolledBack    = "UPDATE_ROLLED_BACK"
	CodeInstallFailed = "UPDATE_INSTALL_FAILED"
	CodeBoxTimeout    = "UPDATE_BOX_TIMEOUT"
	CodeBoxDown       = "UPDATE_BOX_DOWN"
	CodeBusy          = "UPDATE_BUSY"
	CodeNoBundle      = "UPDATE_NO_BUNDLE"
	CodeNoIndex       = "UPDATE_NO_RELEASE_INDEX"
	CodeIndexFailed   = "UPDATE_RELEASE_INDEX_FAILED"
	CodeTooLarge      = "BUNDLE_TOO_LARGE"
	CodeNoRoom        = "UPDATE_NO_ROOM"
)

// Reason is why an update stopped: a code, the specifics for an
// engineer (English), and the code in words, filled per request.
type Reason struct {
	Error   string `json:"error,omitempty"`
	Detail  string `json:"detail,omitempty"`
	Message string `json:"message,omitempty"`
}

func reasonOf(err error) Reason {
	if r := (*Refusal)(nil); errors.As(err, &r) {
		return Reason{Error: r.Code, Detail: r.Detail}
	}
	return Reason{Error: CodeInstallFailed, Detail: err.Error()}
}

// BoxState is this box's update, kept in its data directory across the
// restart into the new version.
type BoxState struct {
	State  string `json:"state"`
	From   string `json:"from,omitempty"` // the version before
	To     string `json:"to,omitempty"`   // the version installed
	SHA256 string `json:"sha256,omitempty"`
	Reason
}

func loadState(dir string) (BoxState, error) {
	b, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return BoxState{State: StateIdle}, nil
	}
	if err != nil {
		return BoxState{}, err
	}
	var s BoxState
	if err := json.Unmarshal(b, &s); err != nil || s.State == "" {
		return BoxState{State: StateIdle}, nil
	}
	return s, nil
}

func saveState(dir string, s BoxState) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(dir, "state.json"), b, 0o600)
}

// resumeState is the state a box starts in, from the one it saved
// before its restart and the version it now runs: the new version means
// a trial (until it is healthy); the old one means the boot loader (or
// the launcher) went back to the old slot by itself.
func resumeState(saved BoxState, running string) BoxState {
	switch saved.State {
	case StateRebooting, StateTrial:
		if running == saved.To {
			saved.State, saved.Reason = StateTrial, Reason{}
			return saved
		}
		saved.State = StateRolledBack
		saved.Reason = Reason{Error: CodeRolledBack, Detail: "version " + saved.To + " did not become healthy; the box went back to " + running + " by itself"}
	case StateReceiving, StateInstalling:
		saved.State = StateFailed
		saved.Reason = Reason{Error: CodeInstallFailed, Detail: "the box restarted while it was installing; it runs " + running}
	}
	return saved
}
