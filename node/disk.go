package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"

	"masterorder/node/restart"
	"masterorder/raftfsm"
)

// The box's own card: free space, writes refused, writes slow. Each box
// watches its data directory (statfs every second), the FSM's pauses
// (raftfsm/pause.go) and its Raft log's writes, and sums them up as one
// state the status, /metrics and the console show:
//
//	ok        nothing to tell
//	low       below the low floor: backups are refused, and a snapshot
//	          capture is refused when its side copy would cross the hard
//	          floor (a capture copies the FSM files: it doubles their size
//	          on disk for a moment)
//	full      below the hard floor, or a write failed for lack of space:
//	          as the leader the box refuses writes (503 DISK_FULL) and
//	          hands the leadership on, before SQLite or bbolt fail
//	          mid-commit; the FSM pauses and catches up once there is room
//	readonly  the file system refuses writes (or an I/O error): the FSM
//	          pauses and retries; if it lasts disk.readonly_exit_after the
//	          process exits (status 1) so its unit or a reboot can act
//	slow      a Raft log write took longer than disk.slow_write within
//	          the last minute (a worn card stalls fsync)

// Disk states.
const (
	DiskOK       = "ok"
	DiskLow      = "low"
	DiskFull     = "full"
	DiskReadOnly = "readonly"
	DiskSlow     = "slow"
)

var (
	// ErrDiskFull: this box, the leader, is below its hard floor and
	// takes no writes (503 DISK_FULL).
	ErrDiskFull = errors.New("this box's storage is full: it takes no writes")
	// ErrDiskLow: a backup is refused below the low floor.
	ErrDiskLow = errors.New("this box's storage is low: backups are refused until there is room")
)

// DiskConfig is [disk]: the floors of free space on the data directory's
// file system. Each floor is the smaller of its share of the file system
// and its size.
type DiskConfig struct {
	LowFloorPercent  float64 `toml:"low_floor_percent"`
	LowFloorMB       int64   `toml:"low_floor_mb"`
	HardFloorPercent float64 `toml:"hard_floor_percent"`
	HardFloorMB      int64   `toml:"hard_floor_mb"`
	// SlowWrite: a Raft log write (bbolt commit and fsync) slower than
	// this marks the card slow for a minute.
	SlowWrite Duration `toml:"slow_write"`
	// ReadOnlyExitAfter: how long the box waits out a read-only card
	// before it exits to its unit (0: never).
	ReadOnlyExitAfter Duration `toml:"readonly_exit_after"`
}

func defaultDisk() DiskConfig {
	return DiskConfig{LowFloorPercent: 10, LowFloorMB: 200, HardFloorPercent: 2, HardFloorMB: 64,
		SlowWrite: Duration{500 * time.Millisecond}, ReadOnlyExitAfter: Duration{2 * time.Minute}}
}

func (d DiskConfig) validate() error {
	bad := func(setting, problem string) error { return &ConfigError{Setting: "disk." + setting, Problem: problem} }
	if d.LowFloorPercent < 0 || d.LowFloorPercent > 50 || d.HardFloorPercent < 0 || d.HardFloorPercent > d.LowFloorPercent {
		return bad("hard_floor_percent", "floors are 0..50 %, the hard one not above the low one")
	}
	if d.LowFloorMB < 0 || d.HardFloorMB < 0 || d.HardFloorMB > d.LowFloorMB {
		return bad("hard_floor_mb", "floors are sizes ≥ 0, the hard one not above the low one")
	}
	if d.SlowWrite.Duration <= 0 {
		return bad("slow_write", "must be positive")
	}
	if d.ReadOnlyExitAfter.Duration < 0 {
		return bad("readonly_exit_after", "must be 0 (never) or positive")
	}
	return nil
}

// floor is the smaller of pct of total and mb.
func floor(total uint64, pct float64, mb int64) uint64 {
	return min(uint64(float64(total)*pct/100), uint64(mb)<<20)
}

// DiskStatus is one box's card as it reports it (the status's disk).
type DiskStatus struct {
	State      string    `json:"state"`
	FreeBytes  uint64    `json:"freeBytes"`
	TotalBytes uint64    `json:"totalBytes"`
	Since      time.Time `json:"since"`
}

// How long a failed Raft log write keeps the box from voting (refreshed
// by every failed retry; a write that works ends it).
const appendFailHold = 10 * time.Second

// slowHold: how long one slow write marks the card slow.
const slowHold = time.Minute

type diskWatch struct {
	mu            sync.Mutex
	cur           DiskStatus
	free, total   uint64
	fsmBytes      int64
	rdonly        bool // statfs says read-only
	pause         *raftfsm.PausedError
	appendErr     error
	appendErrAt   time.Time
	lastSlow      time.Time
	readOnlySince time.Time
	lastHandOver  time.Time
	peers         map[string]peerReport
	wake          chan struct{}
}

// Disk is this box's card now.
func (n *Node) Disk() DiskStatus {
	n.disk.mu.Lock()
	defer n.disk.mu.Unlock()
	return n.disk.cur
}

// PeerDisk is a member's card as it last reported it (false: never).
func (n *Node) PeerDisk(id string) (DiskStatus, bool) {
	if id == n.cfg.NodeID {
		return n.Disk(), true
	}
	n.disk.mu.Lock()
	defer n.disk.mu.Unlock()
	d, ok := n.disk.peers[id]
	return d.DiskStatus, ok
}

// statDisk reads free and total bytes and the read-only flag of dir's
// file system.
func statDisk(dir string) (free, total uint64, rdonly bool, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, 0, false, fmt.Errorf("statfs %s: %w", dir, err)
	}
	bs := uint64(st.Bsize)
	const stRdonly = 1 // ST_RDONLY
	return st.Bavail * bs, st.Blocks * bs, uint64(st.Flags)&stRdonly != 0, nil
}

// refreshDisk recomputes the state; it returns it.
func (n *Node) refreshDisk(now time.Time) DiskStatus {
	free, total, rdonly, err := statDisk(n.cfg.DataDir)
	fsmBytes := n.fsm.FilesBytes()
	pause := n.fsm.Paused()
	d := &n.disk
	d.mu.Lock()
	defer d.mu.Unlock()
	if err == nil {
		d.free, d.total, d.rdonly = free, total, rdonly
	}
	d.fsmBytes = fsmBytes
	d.pause = pause
	cfg := n.cfg.Disk
	hard := floor(d.total, cfg.HardFloorPercent, cfg.HardFloorMB)
	low := floor(d.total, cfg.LowFloorPercent, cfg.LowFloorMB)
	in := diskInputs{free: d.free, total: d.total, fsmBytes: fsmBytes, rdonly: d.rdonly, pause: pause,
		slow: !d.lastSlow.IsZero() && now.Sub(d.lastSlow) < slowHold}
	if d.appendErr != nil && now.Sub(d.appendErrAt) < appendFailHold {
		in.appendErr = d.appendErr
	}
	state := diskState(in, cfg)
	if state != d.cur.State {
		if d.cur.State != "" || state != DiskOK {
			n.log.Warn("storage state changed", "from", d.cur.State, "to", state, "freeBytes", d.free, "totalBytes", d.total,
				"hardFloor", hard, "lowFloor", low, "fsmBytes", fsmBytes)
		}
		d.cur.Since = now.UTC()
	}
	if state == DiskReadOnly {
		if d.readOnlySince.IsZero() {
			d.readOnlySince = now
		}
	} else {
		d.readOnlySince = time.Time{}
	}
	d.cur.State, d.cur.FreeBytes, d.cur.TotalBytes = state, d.free, d.total
	return d.cur
}

// diskInputs is what the state is judged from.
type diskInputs struct {
	free, total uint64
	fsmBytes    int64
	rdonly      bool                 // statfs says read-only
	pause       *raftfsm.PausedError // the FSM waits out a failure
	appendErr   error                // a recent failed Raft log write
	slow        bool                 // a recent slow Raft log write
}

// diskState sums the inputs up as one state, the worst first.
func diskState(in diskInputs, cfg DiskConfig) string {
	hard := floor(in.total, cfg.HardFloorPercent, cfg.HardFloorMB)
	low := floor(in.total, cfg.LowFloorPercent, cfg.LowFloorMB)
	switch {
	case in.rdonly || (in.pause != nil && in.pause.Class != raftfsm.ClassFull) ||
		(in.appendErr != nil && raftfsm.Classify(in.appendErr) != raftfsm.ClassFull):
		return DiskReadOnly
	case in.free < hard || in.pause != nil || in.appendErr != nil:
		return DiskFull
	case in.slow:
		return DiskSlow
	case in.free < low || in.free < uint64(in.fsmBytes)+hard:
		// Low, or a capture's side copy would cross the hard floor.
		return DiskLow
	}
	return DiskOK
}

// watchDisk refreshes the state every second (and at once when the FSM
// pauses or resumes), hands the leadership on while full, and exits the
// process when a read-only card outlasts disk.readonly_exit_after.
func (n *Node) watchDisk() {
	defer n.wg.Done()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	var peersAsked time.Time
	for {
		now := time.Now()
		s := n.refreshDisk(now)
		if now.Sub(peersAsked) >= peerDiskEvery {
			peersAsked = now
			n.wg.Add(1)
			go n.fetchPeerDisks()
		}
		if s.State == DiskFull || s.State == DiskReadOnly {
			n.handOverForDisk(now)
		}
		n.disk.mu.Lock()
		since := n.disk.readOnlySince
		n.disk.mu.Unlock()
		if after := n.cfg.Disk.ReadOnlyExitAfter.Duration; after > 0 && !since.IsZero() && now.Sub(since) > after {
			n.fail(fmt.Errorf("the memory card has refused writes for %v and the box cannot recover in place: exiting so that the unit (or a reboot with a file system check) can act", now.Sub(since).Round(time.Second)))
			return
		}
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
		case <-n.disk.wake:
		}
	}
}

// handOverForDisk gives up the leadership of a box whose card is full or
// read-only, at most every 30 s (all boxes full: nobody better to take it).
func (n *Node) handOverForDisk(now time.Time) {
	if n.raft == nil || n.raft.State() != raft.Leader {
		return
	}
	n.disk.mu.Lock()
	if now.Sub(n.disk.lastHandOver) < 30*time.Second {
		n.disk.mu.Unlock()
		return
	}
	n.disk.lastHandOver = now
	n.disk.mu.Unlock()
	if !n.steppingDown.CompareAndSwap(false, true) {
		return
	}
	n.log.Warn("storage full or read-only on the leader: handing the leadership to another member", "disk", n.Disk().State)
	go func() {
		defer n.steppingDown.Store(false)
		if err := n.raft.LeadershipTransfer().Error(); err != nil {
			n.log.Warn("leadership transfer for storage", "error", err)
		}
	}()
}

// wakeDisk asks watchDisk for a refresh now.
func (n *Node) wakeDisk() {
	select {
	case n.disk.wake <- struct{}{}:
	default:
	}
}

// onFSMPause is the FSM's pause listener: the state changes at once, and
// a leader hands over (a paused FSM answers nothing).
func (n *Node) onFSMPause(p *raftfsm.PausedError) {
	n.wakeDisk()
	// Raft replays entries before NewRaft returns: n.raft may not be set.
	if p != nil && n.raftRef.Load() != nil {
		n.stepDownIfHalted()
	}
}

// diskRefusesWrites: as the leader this box takes no writes (hard floor).
func (n *Node) diskRefusesWrites() bool {
	s := n.Disk().State
	return s == DiskFull || s == DiskReadOnly
}

// noteLogWrite records one write of the Raft log: how long it took and
// whether it failed.
func (n *Node) noteLogWrite(took time.Duration, err error) {
	d := &n.disk
	d.mu.Lock()
	defer d.mu.Unlock()
	now := time.Now()
	if err != nil {
		first := d.appendErr == nil
		d.appendErr, d.appendErrAt = err, now
		if first {
			n.log.Error("raft log write failed: this box does not vote until a write works", "error", err)
			go n.wakeDisk()
		}
		return
	}
	if d.appendErr != nil {
		n.log.Info("raft log writes work again")
		d.appendErr = nil
		go n.wakeDisk()
	}
	if took > n.cfg.Disk.SlowWrite.Duration {
		d.lastSlow = now
	}
}

// voteRefusal says why this box must not vote now: its Raft log could not
// take the last entries (a voter must hold what it acknowledges).
func (n *Node) voteRefusal() error {
	d := &n.disk
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.appendErr != nil && time.Since(d.appendErrAt) < appendFailHold {
		return fmt.Errorf("not voting: the raft log cannot be written (%v)", d.appendErr)
	}
	if d.rdonly {
		return errors.New("not voting: the data directory is read-only")
	}
	return nil
}

// Stable-store keys hashicorp/raft writes when it casts a vote (its own
// as a candidate too) before answering; an error there means no vote.
var (
	keyLastVoteTerm = "LastVoteTerm"
	keyLastVoteCand = "LastVoteCand"
)

// voteGuard is the Raft stable store with votes refused while the box
// cannot append (voteRefusal). hashicorp/raft has no switch to stop a
// voter from voting, but it persists every vote before granting it and
// grants none when that write fails ("failed to persist vote"): refusing
// the write is refusing the vote, for others' elections and its own.
// The current term is never refused: raft panics if it cannot store it.
type voteGuard struct {
	raft.StableStore
	refuse func() error
}

func (s voteGuard) Set(key, val []byte) error {
	if string(key) == keyLastVoteCand {
		if err := s.refuse(); err != nil {
			return err
		}
	}
	return s.StableStore.Set(key, val)
}

func (s voteGuard) SetUint64(key []byte, val uint64) error {
	if string(key) == keyLastVoteTerm {
		if err := s.refuse(); err != nil {
			return err
		}
	}
	return s.StableStore.SetUint64(key, val)
}

// captureGate refuses a capture whose side copy would take the free space
// below the hard floor (it holds as much again as the FSM files).
func (n *Node) captureGate(fsmBytes int64) error {
	d := &n.disk
	d.mu.Lock()
	defer d.mu.Unlock()
	hard := floor(d.total, n.cfg.Disk.HardFloorPercent, n.cfg.Disk.HardFloorMB)
	if d.total > 0 && d.free < uint64(fsmBytes)+hard {
		return fmt.Errorf("%w: a copy of the %d-byte replica would leave less than the hard floor (%d bytes free)", ErrDiskLow, fsmBytes, d.free)
	}
	return nil
}

// fsmSource is where a paused FSM catches up from: the Raft log and the
// newest local snapshot.
type fsmSource struct {
	logs  raft.LogStore
	snaps raft.SnapshotStore
}

func (s fsmSource) GetLog(index uint64, l *raft.Log) error { return s.logs.GetLog(index, l) }

func (s fsmSource) LatestSnapshot() (uint64, io.ReadCloser, error) {
	list, err := s.snaps.List()
	if err != nil || len(list) == 0 {
		return 0, nil, err
	}
	meta, rc, err := s.snaps.Open(list[0].ID)
	if err != nil {
		return 0, nil, err
	}
	return meta.Index, rc, nil
}

// peerReport is what GET /internal/disk answers: a box's card and why it
// last started (lastrestart.go), for the others' status. A box of an
// older version answers only the card.
type peerReport struct {
	DiskStatus
	LastRestart *restart.Record `json:"lastRestart,omitempty"`
}

// serveDisk is GET /internal/disk: this box's card and last restart for
// the others' status.
func (n *Node) serveDisk(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(peerReport{DiskStatus: n.Disk(), LastRestart: n.LastRestart()})
}

// peerDiskEvery: how often each member's card is asked for.
const peerDiskEvery = 2 * time.Second

// fetchPeerDisks asks every other member for its card.
func (n *Node) fetchPeerDisks() {
	defer n.wg.Done()
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return
	}
	var wg sync.WaitGroup
	for _, srv := range f.Configuration().Servers {
		if string(srv.ID) == n.cfg.NodeID {
			continue
		}
		wg.Add(1)
		go func(id, addr string) {
			defer wg.Done()
			n.fetchPeerDisk(n.ctx, id, addr)
		}(string(srv.ID), string(srv.Address))
	}
	wg.Wait()
}

// fetchPeerDisk asks a member for its card (short timeout) and keeps the
// answer; a member that does not answer keeps what it last reported.
func (n *Node) fetchPeerDisk(ctx context.Context, id, raftAddr string) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, n.internalURL(raftAddr, "/internal/disk"), nil)
	if err != nil {
		return
	}
	req.Header.Set(secretHeader, n.cfg.ClusterSecret)
	resp, err := n.diskHTTP.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	var s peerReport
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 8192)).Decode(&s) != nil || s.State == "" {
		return
	}
	n.disk.mu.Lock()
	if n.disk.peers == nil {
		n.disk.peers = map[string]peerReport{}
	}
	n.disk.peers[id] = s
	n.disk.mu.Unlock()
}

// diskCollector exports the card at scrape time.
type diskCollector struct {
	n                  *Node
	free, total, state *prometheus.Desc
	fsm, paused        *prometheus.Desc
}

func newDiskCollector(n *Node) *diskCollector {
	return &diskCollector{n: n,
		free:   prometheus.NewDesc("masterorder_disk_free_bytes", "Free bytes on the data directory's file system (for this user).", nil, nil),
		total:  prometheus.NewDesc("masterorder_disk_total_bytes", "Size of the data directory's file system.", nil, nil),
		state:  prometheus.NewDesc("masterorder_disk_state", "1 for the storage state this box is in (ok, low, full, readonly, slow).", []string{"state"}, nil),
		fsm:    prometheus.NewDesc("masterorder_fsm_files_bytes", "Bytes of the FSM files (a snapshot capture copies as much).", nil, nil),
		paused: prometheus.NewDesc("masterorder_fsm_paused", "1 while the state machine waits out a storage failure.", nil, nil),
	}
}

func (c *diskCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.free
	ch <- c.total
	ch <- c.state
	ch <- c.fsm
	ch <- c.paused
}

func (c *diskCollector) Collect(ch chan<- prometheus.Metric) {
	d := &c.n.disk
	d.mu.Lock()
	cur, fsmBytes, paused := d.cur, d.fsmBytes, d.pause != nil
	d.mu.Unlock()
	g := func(desc *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v, labels...)
	}
	g(c.free, float64(cur.FreeBytes))
	g(c.total, float64(cur.TotalBytes))
	for _, s := range []string{DiskOK, DiskLow, DiskFull, DiskReadOnly, DiskSlow} {
		v := 0.0
		if s == cur.State {
			v = 1
		}
		g(c.state, v, s)
	}
	g(c.fsm, float64(fsmBytes))
	p := 0.0
	if paused {
		p = 1
	}
	g(c.paused, p)
}
