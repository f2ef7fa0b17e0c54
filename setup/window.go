package setup

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// DefaultWindow is how long after power-on a box accepts being claimed.
// After it a box waits for the next power-on: claiming needs someone who
// can reach the box's plug.
const DefaultWindow = 30 * time.Minute

// Window is the claim window: open from Opened for Length.
type Window struct {
	Opened time.Time
	Length time.Duration
}

// OpenAt reports whether the window is open at now.
func (w Window) OpenAt(now time.Time) bool {
	return !now.Before(w.Opened) && now.Before(w.Opened.Add(w.Length))
}

// Closes is when the window closes.
func (w Window) Closes() time.Time { return w.Opened.Add(w.Length) }

// BootWindow opens the window at the machine's boot, read from
// /proc/uptime (relative to now, so a wrong wall clock does not matter);
// where there is none it opens at now (the process start).
func BootWindow(procUptime string, length time.Duration, now time.Time) Window {
	if up, ok := readUptime(procUptime); ok {
		return Window{Opened: now.Add(-up), Length: length}
	}
	return Window{Opened: now, Length: length}
}

func readUptime(path string) (time.Duration, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, false
	}
	s, err := strconv.ParseFloat(f[0], 64)
	if err != nil || s < 0 {
		return 0, false
	}
	return time.Duration(s * float64(time.Second)), true
}
