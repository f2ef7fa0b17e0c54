// Package wallclock keeps a box's wall clock right without a real-time
// clock: it moves the system clock forward (never back) to the latest time
// the box has reason to believe — the last time it knew before it was
// switched off, the time the cluster last stamped, a trusted peer's clock,
// a manager's tap — and says where the time it shows came from: NTP, a
// manager, a trusted box of the cluster, or nobody (unknown).
//
// Setting the clock is behind Setter (System: clock_settime, which needs
// CAP_SYS_TIME; Fake: an offset, for tests); reading whether NTP
// disciplines the kernel clock is KernelSynced (adjtimex, read only).
package wallclock

import (
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Source is where a box's wall clock got its time from.
type Source string

// The sources, most to least trusted. Unknown: the box only knows that
// its clock is no earlier than it last knew and than the cluster stamped;
// after a power cut with no NTP that is hours or days behind.
const (
	NTP     Source = "ntp"     // the kernel clock is disciplined by an NTP server
	Manager Source = "manager" // a manager set or confirmed it from a tablet
	Cluster Source = "cluster" // taken from a box whose clock was trusted
	Unknown Source = "unknown"
)

// Trusted says whether a clock set from s shows the real time.
func (s Source) Trusted() bool { return s == NTP || s == Manager || s == Cluster }

// Setter sets the system's wall clock.
type Setter interface {
	Set(t time.Time) error
}

// System sets the kernel's wall clock (CLOCK_REALTIME). It needs
// CAP_SYS_TIME: the package's unit grants it (AmbientCapabilities).
type System struct{}

// Set steps the clock to t.
func (System) Set(t time.Time) error {
	ts := unix.NsecToTimespec(t.UnixNano())
	if err := unix.ClockSettime(unix.CLOCK_REALTIME, &ts); err != nil {
		if errors.Is(err, unix.EPERM) {
			return fmt.Errorf("set the system clock: %w (the process needs CAP_SYS_TIME)", err)
		}
		return fmt.Errorf("set the system clock: %w", err)
	}
	return nil
}

// maxSyncedError is the kernel's largest error estimate (maxerror, in
// microseconds) that still counts as synced: the kernel raises maxerror
// by 500 ppm while no NTP client updates it and marks the clock unsynced
// at 16 s.
const maxSyncedError = 16_000_000

// Adjtimex is the kernel call KernelSynced reads (a variable so tests can
// hand it the answers of a synced and an unsynced kernel).
var Adjtimex = func(tx *unix.Timex) (int, error) { return unix.Adjtimex(tx) }

// TimesyncdFile is the file systemd-timesyncd touches once it has
// synchronised the clock since boot (it lives on /run, a tmpfs).
var TimesyncdFile = "/run/systemd/timesync/synchronized"

// KernelSynced reports whether an NTP client disciplines the kernel clock:
// adjtimex with no modes (read only, no privilege) says STA_UNSYNC is
// clear, its state is not TIME_ERROR and its maximum error is below 16 s;
// or systemd-timesyncd has said so since boot.
func KernelSynced() bool {
	var tx unix.Timex // Modes 0: read only
	state, err := Adjtimex(&tx)
	if err == nil && state != unix.TIME_ERROR && tx.Status&unix.STA_UNSYNC == 0 && tx.Maxerror < maxSyncedError {
		return true
	}
	if TimesyncdFile == "" {
		return false
	}
	st, err := os.Stat(TimesyncdFile)
	if err != nil {
		return false
	}
	// /run is emptied at boot, so the file is this boot's; a stale one
	// (a /run that is not a tmpfs) must at least be newer than the boot.
	return st.ModTime().After(bootTime())
}

// bootTime is when the system booted, by the wall clock (zero when the
// kernel does not say).
func bootTime() time.Time {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return time.Time{}
	}
	return time.Now().Add(-time.Duration(ts.Nano()))
}
