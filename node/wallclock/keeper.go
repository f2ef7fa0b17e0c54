package wallclock

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"masterorder/node/atomicfile"
)

// FileName is the box's clock file in its data directory: the last time
// it knew, and where its clock's time came from during which boot.
const FileName = "clock.json"

// Slack is how far behind a time a clock may be before it is stepped
// forward to it: a stamp travels a little before it is read.
const Slack = 2 * time.Second

// AheadTolerance is how far ahead of a trusted time a clock may be and
// still count as set from it (a clock that is further ahead is never put
// back; it is just not called right).
const AheadTolerance = 5 * time.Minute

// Options configure Open.
type Options struct {
	// Dir holds FileName (the box's data directory).
	Dir string
	// Now reads the wall clock (time.Now where nil).
	Now func() time.Time
	// Setter steps the clock; nil: this box never sets its clock (its
	// state is still judged).
	Setter Setter
	// Synced reports whether NTP disciplines the clock (KernelSynced in
	// production); nil: never.
	Synced func() bool
	// BootID is the system's boot id: a trusted source outlives a restart
	// of the process within one boot (the kernel clock kept running), not
	// a reboot.
	BootID string
}

// State is what the box knows about its clock, for the cluster status.
type State struct {
	// Source: ntp, manager, cluster or unknown.
	Source Source `json:"source"`
	// Trusted: the clock shows the real time (source is not unknown).
	Trusted bool `json:"trusted"`
	// Since is when the clock got its time from Source (RFC 3339, absent
	// while unknown).
	Since string `json:"since,omitempty"`
	// Wall is the box's wall clock when it answered (Unix ms).
	Wall int64 `json:"wall"`
	// LastKnown is the latest time this box knew (Unix ms): its clock
	// never starts earlier after a power cut.
	LastKnown int64 `json:"lastKnown,omitempty"`
	// SetError says why the box could not step its clock (absent: it can,
	// or never had to).
	SetError string `json:"setError,omitempty"`
}

// Keeper keeps one box's wall clock: forward only, with its source.
type Keeper struct {
	o Options

	mu        sync.Mutex
	source    Source
	since     time.Time
	lastKnown time.Time
	setErr    error

	syncMu    sync.Mutex
	syncRead  time.Time // when synced was last asked (monotonic)
	syncValue bool
}

// syncCache is how long one reading of Synced is reused: the leader asks
// for every command it stamps.
const syncCache = time.Second

type fileState struct {
	LastKnown int64  `json:"lastKnown"`
	Source    Source `json:"source"`
	Since     int64  `json:"since,omitempty"`
	BootID    string `json:"bootId,omitempty"`
}

// Open reads the clock file and moves the clock forward to the last time
// the box knew (a box without a real-time clock boots at its image's
// date). A missing or unreadable file is a first start.
func Open(o Options) (*Keeper, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	k := &Keeper{o: o, source: Unknown}
	var f fileState
	b, err := os.ReadFile(filepath.Join(o.Dir, FileName))
	switch {
	case err == nil:
		if json.Unmarshal(b, &f) != nil {
			f = fileState{} // torn or foreign: start as a first start
		}
	case errors.Is(err, os.ErrNotExist):
	default:
		return nil, fmt.Errorf("read the clock file: %w", err)
	}
	if f.LastKnown > 0 {
		k.lastKnown = time.UnixMilli(f.LastKnown)
	}
	if f.Source.Trusted() && f.BootID != "" && f.BootID == o.BootID {
		k.source, k.since = f.Source, time.UnixMilli(f.Since)
	}
	if !k.lastKnown.IsZero() {
		k.Advance(k.lastKnown, Unknown)
	}
	return k, nil
}

// Now reads the box's wall clock.
func (k *Keeper) Now() time.Time { return k.o.Now() }

// Floor is the earliest the time can be: the clock, or the last time the
// box knew when its clock could not be moved to it.
func (k *Keeper) Floor() time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := k.o.Now()
	if k.lastKnown.After(now) {
		return k.lastKnown
	}
	return now
}

func (k *Keeper) synced() bool {
	if k.o.Synced == nil {
		return false
	}
	k.syncMu.Lock()
	defer k.syncMu.Unlock()
	if k.syncRead.IsZero() || time.Since(k.syncRead) >= syncCache {
		k.syncValue, k.syncRead = k.o.Synced(), time.Now()
	}
	return k.syncValue
}

// Synced reports whether NTP disciplines the clock (read at most once a
// second).
func (k *Keeper) Synced() bool { return k.synced() }

// Advance moves the clock forward to to when it is more than Slack behind
// it, never back. from says what to is worth: Unknown (the last known
// time, the cluster's stamp: a floor, not the real time) leaves the
// clock's source as it is; a trusted source becomes the clock's once the
// clock agrees with to. An NTP-synced clock is left to NTP. It reports
// whether it stepped the clock.
func (k *Keeper) Advance(to time.Time, from Source) (moved bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.synced() {
		k.setSourceLocked(NTP)
		return false
	}
	now := k.o.Now()
	if to.Sub(now) > Slack {
		if k.o.Setter == nil {
			k.setErr = errors.New("this box does not set its clock")
		} else if err := k.o.Setter.Set(to); err != nil {
			k.setErr = err
		} else {
			k.setErr = nil
			moved = true
			now = k.o.Now()
		}
	}
	if to.After(k.lastKnown) {
		k.lastKnown = to // known, even where the clock could not follow
	}
	// A member's clock makes this one trusted; it never replaces a source
	// this box already has (a manager's tap applied here, NTP).
	if from.Trusted() && now.Sub(to) >= -Slack && now.Sub(to) <= AheadTolerance && !(from == Cluster && k.source.Trusted()) {
		k.setSourceLocked(from)
	}
	return moved
}

func (k *Keeper) setSourceLocked(s Source) {
	if k.source != s {
		k.source, k.since = s, k.o.Now()
	}
}

// State is the clock's state now.
func (k *Keeper) State() State {
	synced := k.synced()
	k.mu.Lock()
	defer k.mu.Unlock()
	if synced {
		k.setSourceLocked(NTP)
	}
	s := State{Source: k.source, Trusted: k.source.Trusted(), Wall: k.o.Now().UnixMilli()}
	if s.Trusted {
		s.Since = k.since.UTC().Format(time.RFC3339)
	}
	if !k.lastKnown.IsZero() {
		s.LastKnown = k.lastKnown.UnixMilli()
	}
	if k.setErr != nil {
		s.SetError = k.setErr.Error()
	}
	return s
}

// Save writes the clock file: the clock as the last known time (never
// earlier than the one already known), and the source with this boot's id.
func (k *Keeper) Save() error {
	k.mu.Lock()
	now := k.o.Now()
	if now.After(k.lastKnown) {
		k.lastKnown = now
	}
	f := fileState{LastKnown: k.lastKnown.UnixMilli(), Source: k.source, BootID: k.o.BootID}
	if k.source.Trusted() {
		f.Since = k.since.UnixMilli()
	}
	k.mu.Unlock()
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(k.o.Dir, FileName), b, 0o600); err != nil {
		return fmt.Errorf("write the clock file: %w", err)
	}
	return nil
}
