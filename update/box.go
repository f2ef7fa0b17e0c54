package update

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"masterorder/node"
)

// Box is one box's side of updates: what it runs, its update state, the
// install the leader asks for, and, after the restart, the trial that
// ends in a commit (healthy) or a fallback to the old version (not
// within the trial timeout). It also serves the console and, while this
// box leads, runs the rollout.
type Box struct {
	n       *node.Node
	cfg     node.UpdateConfig
	version string
	dir     string // <data_dir>/update: state, staged and received bundles
	inst    Installer
	log     *slog.Logger
	client  *http.Client // the release index and its bundle

	mu      sync.Mutex
	st      BoxState
	staged  Staged
	healthy time.Duration // how long the box must stay ready before a commit
}

// Options are what a box needs besides the node.
type Options struct {
	Version string // the version this process runs (main.version)
	// Restart ends this process so that it starts again (the "slots"
	// launcher then boots the slot to try).
	Restart func()
	// Installer replaces the one the config names (tests).
	Installer Installer
	Logger    *slog.Logger
}

// New sets a box's updates up on n: the console's calls, the internal
// channel's, and the leader's rollout worker. Call it before n attaches
// the domain (staff routes) and starts; then Run once it serves.
func New(n *node.Node, o Options) (*Box, error) {
	cfg := n.Config()
	dir := filepath.Join(cfg.DataDir, "update")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("update: %w", err)
	}
	saved, err := loadState(dir)
	if err != nil {
		return nil, fmt.Errorf("update: %w", err)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Restart == nil {
		o.Restart = func() {}
	}
	inst := o.Installer
	if inst == nil {
		inst = NewInstaller(cfg.Update.Installer, cfg.Update.Keyring, cfg.Update.SlotsFile, o.Restart)
	}
	b := &Box{n: n, cfg: cfg.Update, version: o.Version, dir: dir, inst: inst, log: o.Logger,
		client: &http.Client{Timeout: 30 * time.Minute}, healthy: 3 * time.Second}
	b.st = resumeState(saved, o.Version)
	if b.st != saved {
		if err := saveState(dir, b.st); err != nil {
			return nil, fmt.Errorf("update: %w", err)
		}
	}
	if b.st.State == StateRolledBack && saved.State != StateRolledBack {
		b.log.Warn("update: the new version did not come up; back on the old one", "from", b.st.From, "to", b.st.To, "running", o.Version)
	}
	b.staged = loadStaged(dir)
	n.AddStaffRoutes(b.Routes)
	b.internalRoutes()
	n.AddLeaderWorker("update-rollout", b.runRollout)
	return b, nil
}

// Version is the version this box runs.
func (b *Box) Version() string { return b.version }

// State is this box's update state.
func (b *Box) State() BoxState {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.st
}

// InTrial reports whether this box runs a new version it has not
// committed yet (it may still go back to the old one by itself).
func (b *Box) InTrial() bool { return b.State().State == StateTrial }

func (b *Box) setState(s BoxState) {
	b.mu.Lock()
	b.st = s
	b.mu.Unlock()
	if err := saveState(b.dir, s); err != nil {
		b.log.Error("update: state not saved", "error", err)
	}
}

// Run watches a trial until ctx ends: once the box has been ready
// (in the cluster, caught up) for a few seconds it commits the new
// version; past the trial timeout it falls back to the old one.
func (b *Box) Run(ctx context.Context) {
	if !b.InTrial() {
		return
	}
	deadline := time.Now().Add(b.cfg.TrialTimeout.Duration)
	var readySince time.Time
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if b.n.Ready() {
			if readySince.IsZero() {
				readySince = time.Now()
			}
			if time.Since(readySince) >= b.healthy {
				s := b.State()
				if err := b.inst.Commit(); err != nil {
					b.log.Error("update: commit failed; the box stays in trial", "error", err)
					continue
				}
				s.State = StateCommitted
				b.setState(s)
				b.log.Info("update: new version committed", "version", b.version, "from", s.From)
				return
			}
		} else {
			readySince = time.Time{}
		}
		if time.Now().After(deadline) {
			s := b.State()
			b.log.Error("update: the new version did not become healthy in time; going back to the old one", "version", b.version, "timeout", b.cfg.TrialTimeout.Duration)
			s.State = StateRebooting // resumeState on the old version words it rolled back
			b.setState(s)
			if err := b.inst.Fallback(); err != nil {
				b.log.Error("update: fallback failed", "error", err)
			}
			return
		}
	}
}

// BoxReport is one box as the leader and the console see it.
type BoxReport struct {
	NodeID  string `json:"nodeId"`
	Version string `json:"version"`
	Ready   bool   `json:"ready"`
	BoxState
	// Reachable is false when the box did not answer (the console's
	// report of another box).
	Reachable bool `json:"reachable"`
}

func (b *Box) report() BoxReport {
	return BoxReport{NodeID: b.n.Config().NodeID, Version: b.version, Ready: b.n.Ready(), BoxState: b.State(), Reachable: true}
}

// installRequest is the leader's request to one box.
type installRequest struct {
	Version        string `json:"version"`
	SHA256         string `json:"sha256"`
	From           string `json:"from"` // the box holding the bundle
	AllowDowngrade bool   `json:"allowDowngrade"`
}

func (b *Box) internalRoutes() {
	b.n.AddInternalRoute("GET /internal/update/state", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(b.report())
	}))
	b.n.AddInternalRoute("POST /internal/update/install", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req installRequest
		if err := json.NewDecoder(io.LimitReader(r.Body, 4096)).Decode(&req); err != nil || len(req.SHA256) != 64 {
			http.Error(w, "bad install request", http.StatusBadRequest)
			return
		}
		b.mu.Lock()
		busy := b.st.State == StateReceiving || b.st.State == StateInstalling || b.st.State == StateRebooting || b.st.State == StateTrial
		if !busy {
			b.st = BoxState{State: StateReceiving, From: b.version, To: req.Version, SHA256: req.SHA256}
		}
		b.mu.Unlock()
		if busy {
			http.Error(w, "an update is under way on this box", http.StatusConflict)
			return
		}
		go b.install(req)
		w.WriteHeader(http.StatusAccepted)
	}))
	b.n.AddInternalRoute("GET /internal/update/bundle", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path := b.bundleFile(r.URL.Query().Get("sha256"))
		if path == "" {
			http.Error(w, "no such bundle here", http.StatusNotFound)
			return
		}
		f, err := os.Open(path)
		if err != nil {
			http.Error(w, "no such bundle here", http.StatusNotFound)
			return
		}
		defer f.Close()
		w.Header().Set("Content-Type", "application/octet-stream")
		io.Copy(w, f)
	}))
}

// bundleFile is the local bundle with that sha256 (staged, or received
// for the last install), "" when there is none.
func (b *Box) bundleFile(sum string) string {
	if len(sum) != 64 {
		return ""
	}
	b.mu.Lock()
	staged := b.staged
	b.mu.Unlock()
	if staged.State == StagedReady && staged.SHA256 == sum {
		return filepath.Join(b.dir, stagedName)
	}
	p := filepath.Join(b.dir, "received-"+sum+".raucb")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	return ""
}

// install is the leader's request carried out: the bundle fetched from
// the box holding it (unless here already), verified by RAUC for this
// box, written into the other slot, and the box restarted into it.
func (b *Box) install(req installRequest) {
	ctx, cancel := context.WithTimeout(context.Background(), b.cfg.BoxTimeout.Duration)
	defer cancel()
	fail := func(err error) {
		s := b.State()
		s.State, s.Reason = StateFailed, reasonOf(err)
		b.setState(s)
		b.log.Error("update: install failed; the box stays on its version", "to", req.Version, "error", err)
	}
	path := b.bundleFile(req.SHA256)
	if path == "" {
		p, err := b.receive(ctx, req)
		if err != nil {
			fail(err)
			return
		}
		path = p
	}
	if _, err := Verify(ctx, path, Expect{Keyring: b.cfg.Keyring, Compatible: b.cfg.Compatible, Running: b.version, AllowDowngrade: req.AllowDowngrade}); err != nil {
		fail(err)
		return
	}
	s := b.State()
	s.State = StateInstalling
	b.setState(s)
	b.log.Info("update: installing", "from", b.version, "to", req.Version)
	if err := b.inst.Install(ctx, path); err != nil {
		fail(err)
		return
	}
	s.State = StateRebooting
	b.setState(s)
	b.log.Info("update: installed; restarting into the new version", "to", req.Version)
	if err := b.inst.Reboot(); err != nil {
		fail(err)
	}
}

// receive fetches the bundle over the internal channel from the box
// that holds it, into this box's data directory, checking its sha256.
func (b *Box) receive(ctx context.Context, req installRequest) (string, error) {
	resp, err := b.n.PeerRequest(ctx, req.From, http.MethodGet, "/internal/update/bundle?sha256="+req.SHA256, nil)
	if err != nil {
		return "", fmt.Errorf("fetch the bundle from %s: %w", req.From, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("fetch the bundle from %s: status %d", req.From, resp.StatusCode)
	}
	if err := b.checkRoom(resp.ContentLength); err != nil {
		return "", err
	}
	// Only one received bundle is kept: the last one.
	old, _ := filepath.Glob(filepath.Join(b.dir, "received-*.raucb"))
	for _, o := range old {
		os.Remove(o)
	}
	final := filepath.Join(b.dir, "received-"+req.SHA256+".raucb")
	sum, _, err := writeBounded(resp.Body, final, b.cfg.MaxBundleMB<<20, nil)
	if err != nil {
		return "", err
	}
	if sum != req.SHA256 {
		os.Remove(final)
		return "", refuse(CodeCorrupt, "received bundle's sha256 %s, expected %s", sum, req.SHA256)
	}
	return final, nil
}

// roomMargin is what a bundle must leave free on the data card beyond
// itself: the Raft log and the replicas go on growing meanwhile.
const roomMargin = 256 << 20

// checkRoom refuses a bundle of size bytes (0: not known yet) that the
// data card cannot hold: a card already low, full or read-only, or one
// that would keep less than roomMargin free beside it. A full card would
// stop the store taking orders; an update can wait.
func (b *Box) checkRoom(size int64) error {
	d := b.n.Disk()
	switch d.State {
	case node.DiskLow, node.DiskFull, node.DiskReadOnly:
		return refuse(CodeNoRoom, "this box's card is %s", d.State)
	}
	if size > 0 && d.TotalBytes > 0 && uint64(size)+roomMargin > d.FreeBytes {
		return refuse(CodeNoRoom, "a %d-byte bundle would leave less than %d MB of the %d bytes free", size, roomMargin>>20, d.FreeBytes)
	}
	return nil
}

// writeBounded streams r into path (through a temporary file, fsynced,
// renamed), at most limit bytes, and returns its sha256 and size;
// progress, if set, is called between chunks (an upload's read
// deadline).
func writeBounded(r io.Reader, path string, limit int64, progress func()) (string, int64, error) {
	tmp := path + ".part"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return "", 0, err
	}
	defer os.Remove(tmp)
	h := sha256.New()
	buf := make([]byte, 256<<10)
	var n int64
	for {
		if progress != nil {
			progress()
		}
		k, rerr := r.Read(buf)
		if k > 0 {
			n += int64(k)
			if n > limit {
				f.Close()
				return "", n, refuse(CodeTooLarge, "more than %d MB", limit>>20)
			}
			h.Write(buf[:k])
			if _, err := f.Write(buf[:k]); err != nil {
				f.Close()
				return "", n, err
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			f.Close()
			return "", n, rerr
		}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return "", n, err
	}
	if err := f.Close(); err != nil {
		return "", n, err
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", n, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}
