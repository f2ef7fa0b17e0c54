package wallclock

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// imageEpoch is where a box without a real-time clock starts: the date
// its image was built.
var imageEpoch = time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)

func open(t *testing.T, dir string, clk *Fake, boot string, synced func() bool) *Keeper {
	t.Helper()
	k, err := Open(Options{Dir: dir, Now: clk.Now, Setter: clk, Synced: synced, BootID: boot})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestForwardNeverBack(t *testing.T) {
	clk := NewFake(imageEpoch)
	k := open(t, t.TempDir(), clk, "b1", nil)
	real := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	if !k.Advance(real, Unknown) {
		t.Fatal("a clock behind the cluster's stamp was not moved forward")
	}
	if d := clk.Now().Sub(real); d < 0 || d > time.Second {
		t.Fatalf("clock %v after moving to %v", clk.Now(), real)
	}
	if st := k.State(); st.Trusted || st.Source != Unknown {
		t.Fatalf("a stamp is a floor, not the real time: %+v", st)
	}
	if k.Advance(real.Add(-time.Hour), Unknown) || k.Advance(real.Add(-time.Hour), Manager) {
		t.Fatal("moved to an earlier time")
	}
	if k.Advance(clk.Now().Add(time.Second), Unknown) {
		t.Fatal("stepped for less than the slack")
	}
	if clk.WentBack() {
		t.Fatal("the clock went back")
	}
	if st := k.State(); st.Trusted {
		t.Fatalf("an hour ahead of a manager's time is not called right: %+v", st)
	}
	// A manager's time a minute behind: no step back, but confirmed.
	k.Advance(clk.Now().Add(-time.Minute), Manager)
	if st := k.State(); !st.Trusted || st.Source != Manager || st.Since == "" {
		t.Fatalf("a manager's confirmation: %+v", st)
	}
	if clk.WentBack() {
		t.Fatal("the clock went back")
	}
	// A member's trusted clock does not replace the manager's tap here.
	k.Advance(clk.Now(), Cluster)
	if st := k.State(); st.Source != Manager {
		t.Fatalf("a member's clock replaced this box's source: %+v", st)
	}
}

func TestLastKnownSurvivesAPowerCut(t *testing.T) {
	dir := t.TempDir()
	clk := NewFake(imageEpoch)
	k := open(t, dir, clk, "boot-1", nil)
	set := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	k.Advance(set, Manager)
	if !k.State().Trusted {
		t.Fatal("not trusted after a manager's time")
	}
	if err := k.Save(); err != nil {
		t.Fatal(err)
	}
	// The process restarts within the same boot: the source holds.
	k = open(t, dir, clk, "boot-1", nil)
	if st := k.State(); st.Source != Manager {
		t.Fatalf("after a restart within the boot: %+v", st)
	}
	// Power cut: the box comes back at its image's date.
	clk2 := NewFake(imageEpoch)
	k = open(t, dir, clk2, "boot-2", nil)
	if clk2.Now().Before(set) {
		t.Fatalf("after a power cut the clock reads %v, earlier than it last knew (%v)", clk2.Now(), set)
	}
	if st := k.State(); st.Trusted || st.Source != Unknown {
		t.Fatalf("after a power cut the last known time is not the real time: %+v", st)
	}
	// A torn file is a first start, not a failure.
	if err := os.WriteFile(filepath.Join(dir, FileName), []byte(`{"lastKn`), 0o600); err != nil {
		t.Fatal(err)
	}
	open(t, dir, NewFake(imageEpoch), "boot-3", nil)
}

func TestNTPOwnsASyncedClock(t *testing.T) {
	clk := NewFake(imageEpoch)
	synced := true
	k := open(t, t.TempDir(), clk, "b", func() bool { return synced })
	if k.Advance(imageEpoch.Add(48*time.Hour), Manager) {
		t.Fatal("stepped a clock NTP disciplines")
	}
	if st := k.State(); st.Source != NTP || !st.Trusted {
		t.Fatalf("synced: %+v", st)
	}
}

func TestSetFailureIsReported(t *testing.T) {
	k, err := Open(Options{Dir: t.TempDir(), Now: func() time.Time { return imageEpoch }})
	if err != nil {
		t.Fatal(err)
	}
	k.Advance(imageEpoch.Add(time.Hour), Manager)
	st := k.State()
	if st.Trusted || st.SetError == "" {
		t.Fatalf("a clock that could not be set: %+v", st)
	}
	if f := k.Floor(); !f.Equal(imageEpoch.Add(time.Hour)) {
		t.Fatalf("floor %v: the known time must count where the clock could not follow", f)
	}
}

// KernelSynced reads adjtimex: STA_UNSYNC, TIME_ERROR and maxerror.
func TestKernelSyncedReadsAdjtimex(t *testing.T) {
	defer func(a func(*unix.Timex) (int, error), f string) { Adjtimex, TimesyncdFile = a, f }(Adjtimex, TimesyncdFile)
	TimesyncdFile = filepath.Join(t.TempDir(), "synchronized")
	for _, tc := range []struct {
		name   string
		state  int
		status int32
		maxerr int64
		want   bool
	}{
		{"disciplined", unix.TIME_OK, unix.STA_PLL, 120_000, true},
		{"unsynced flag", unix.TIME_ERROR, unix.STA_UNSYNC, 16_000_000, false},
		{"flag clear, error grown", unix.TIME_OK, 0, 16_000_000, false},
		{"time error", unix.TIME_ERROR, 0, 1000, false},
	} {
		Adjtimex = func(tx *unix.Timex) (int, error) {
			if tx.Modes != 0 {
				t.Fatalf("adjtimex called with modes %x: it must only read", tx.Modes)
			}
			tx.Status, tx.Maxerror = tc.status, tc.maxerr
			return tc.state, nil
		}
		if got := KernelSynced(); got != tc.want {
			t.Errorf("%s: synced %v, want %v", tc.name, got, tc.want)
		}
	}
	// timesyncd's file says so too.
	Adjtimex = func(tx *unix.Timex) (int, error) { tx.Status = unix.STA_UNSYNC; return unix.TIME_ERROR, nil }
	if err := os.WriteFile(TimesyncdFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if !KernelSynced() {
		t.Error("timesyncd's synchronized file was not read")
	}
}

// On this machine, KernelSynced says what the kernel says.
func TestKernelSyncedOnThisMachine(t *testing.T) {
	var tx unix.Timex
	state, err := unix.Adjtimex(&tx)
	if err != nil {
		t.Skipf("adjtimex: %v", err)
	}
	kernel := state != unix.TIME_ERROR && tx.Status&unix.STA_UNSYNC == 0 && tx.Maxerror < maxSyncedError
	if _, err := os.Stat(TimesyncdFile); err == nil {
		kernel = true
	}
	if got := KernelSynced(); got != kernel {
		t.Fatalf("KernelSynced %v, kernel: state %d status %#x maxerror %d", got, state, tx.Status, tx.Maxerror)
	}
	t.Logf("this kernel: state %d, status %#x, maxerror %d µs: synced %v", state, tx.Status, tx.Maxerror, kernel)
}
