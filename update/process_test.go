package update_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"masterorder/api/apitest"
	"masterorder/bench"
	"masterorder/node/nodetest"
	"masterorder/update"
)

// The rolling update with real processes: three `masterorder run`
// boxes on loopback, each started by a launcher that plays the boot
// loader (bootLauncher: the slot to try once, else the default one), the
// slot switch replaced by a restart into the other slot's binary.

const (
	oldVersion  = "1.0.0"
	newVersion  = "1.1.0"
	staffPW     = "process-test-pw"
	processWait = 60 * time.Second
)

// buildVersion builds the binary with main.version set.
func buildVersion(t *testing.T, dir, version string) string {
	t.Helper()
	out := filepath.Join(dir, "masterorder-"+version)
	cmd := exec.Command("go", "build", "-o", out, "-ldflags", "-X main.version="+version, "..")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", version, err, b)
	}
	return out
}

// bootLauncher stands in for a box's boot loader and its unit: it reads
// the box's BootFile, starts the slot to try once (clearing it first, as
// the Pi firmware's tryboot does) or else the default slot, and starts
// it again whenever the process exits. broken, when set, makes the
// tried slot's system fail at once on this box (its binary is started
// with a flag it does not know): the box must come back on its old slot.
type bootLauncher struct {
	t        *testing.T
	id       string
	bootFile string
	config   string
	log      string
	broken   atomic.Bool

	mu      sync.Mutex
	cmd     *exec.Cmd
	stopped bool
	down    bool // held down by the test
	done    chan struct{}
	boots   []string // the slots it booted, in order
}

func (l *bootLauncher) run() {
	defer close(l.done)
	for {
		l.mu.Lock()
		if l.stopped {
			l.mu.Unlock()
			return
		}
		down := l.down
		l.mu.Unlock()
		if down {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		bf, err := update.ReadBootFile(l.bootFile)
		if err != nil {
			l.t.Errorf("launcher %s: %v", l.id, err)
			return
		}
		slot, tried := bf.Default, false
		if bf.Try != "" {
			slot, tried, bf.Try = bf.Try, true, ""
		}
		bf.Booted = slot
		if err := update.WriteBootFile(l.bootFile, bf); err != nil {
			l.t.Errorf("launcher %s: %v", l.id, err)
			return
		}
		args := []string{"run", "--config", l.config}
		if tried && l.broken.Load() {
			args = append(args, "--the-new-system-is-broken-on-this-box")
		}
		logf, _ := os.OpenFile(l.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		fmt.Fprintf(logf, "--- launcher: booting slot %s (tried %v)\n", slot, tried)
		cmd := exec.Command(bf.Slots[slot], args...)
		cmd.Stdout, cmd.Stderr = logf, logf
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		l.mu.Lock()
		if l.stopped {
			l.mu.Unlock()
			logf.Close()
			return
		}
		err = cmd.Start()
		if err == nil {
			l.cmd = cmd
			l.boots = append(l.boots, slot)
		}
		l.mu.Unlock()
		logf.Close()
		if err != nil {
			l.t.Errorf("launcher %s: start: %v", l.id, err)
			return
		}
		cmd.Wait()
		l.mu.Lock()
		l.cmd = nil
		l.mu.Unlock()
		time.Sleep(100 * time.Millisecond)
	}
}

// kill stops the box's process with SIGKILL; hold keeps it down until
// release.
func (l *bootLauncher) kill(hold bool) {
	l.mu.Lock()
	l.down = hold
	cmd := l.cmd
	l.mu.Unlock()
	if cmd != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

// term stops the box's process with SIGTERM (a clean stop: the box
// commits its files and leaves), and waits up to wait for it to be gone;
// the launcher boots it again from its boot file unless hold keeps it
// down until release. False: still running after wait.
func (l *bootLauncher) term(hold bool, wait time.Duration) bool {
	l.mu.Lock()
	l.down = hold
	cmd := l.cmd
	l.mu.Unlock()
	if cmd == nil {
		return true
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	for deadline := time.Now().Add(wait); ; {
		l.mu.Lock()
		gone := l.cmd != cmd
		l.mu.Unlock()
		if gone {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (l *bootLauncher) release() {
	l.mu.Lock()
	l.down = false
	l.mu.Unlock()
}

func (l *bootLauncher) stop() {
	l.mu.Lock()
	l.stopped = true
	cmd := l.cmd
	l.mu.Unlock()
	if cmd != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	}
	select {
	case <-l.done:
	case <-time.After(20 * time.Second):
		l.mu.Lock()
		if l.cmd != nil {
			syscall.Kill(-l.cmd.Process.Pid, syscall.SIGKILL)
		}
		l.mu.Unlock()
		<-l.done
	}
}

// store is three boxes, each behind its launcher.
type store struct {
	t     *testing.T
	dir   string
	ids   []string
	http  map[string]string
	boxes map[string]*bootLauncher
	cli   *http.Client
	token string
}

// newStore makes three boxes with `init` of oldBin, each booting oldBin
// from both slots; extraConfig is appended to every box's file (more
// settings, e.g. a [raft] table) before it starts.
func newStore(t *testing.T, oldBin, keyring, indexURL string, extraConfig ...string) *store {
	t.Helper()
	s := &store{t: t, dir: t.TempDir(), ids: []string{"a", "b", "c"}, http: map[string]string{}, boxes: map[string]*bootLauncher{},
		cli: apitest.Client(t, &http.Client{Timeout: 10 * time.Second})}
	var spec []string
	for _, id := range s.ids {
		h, r := nodetest.FreePort(t), nodetest.FreePort(t)
		s.http[id] = fmt.Sprintf("127.0.0.1:%d", h)
		spec = append(spec, fmt.Sprintf("%s=127.0.0.1:%d:%d", id, h, r))
	}
	out, err := exec.Command(oldBin, "init", "--shop-id", "t", "--nodes", strings.Join(spec, ","),
		"--out", s.dir, "--staff-password", staffPW, "--plain-http").CombinedOutput()
	if err != nil {
		t.Fatalf("masterorder init: %v\n%s", err, out)
	}
	for _, id := range s.ids {
		slots := filepath.Join(s.dir, "slots-"+id)
		os.MkdirAll(slots, 0o755)
		bf := update.BootFile{Slots: map[string]string{"A": filepath.Join(slots, "A"), "B": filepath.Join(slots, "B")}, Default: "A"}
		raw, _ := os.ReadFile(oldBin)
		os.WriteFile(bf.Slots["A"], raw, 0o755)
		os.WriteFile(bf.Slots["B"], raw, 0o755)
		bootFile := filepath.Join(slots, "boot.json")
		if err := update.WriteBootFile(bootFile, bf); err != nil {
			t.Fatal(err)
		}
		cfg := filepath.Join(s.dir, id+".toml")
		f, err := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(f, "\n[update]\nrelease_index_url = %q\nkeyring = %q\ncompatible = %q\ninstaller = \"slots\"\nslots_file = %q\nbox_timeout = \"3m\"\ntrial_timeout = \"1m\"\nmax_bundle_mb = 256\n",
			indexURL, keyring, board, bootFile)
		for _, extra := range extraConfig {
			fmt.Fprintf(f, "\n%s\n", extra)
		}
		f.Close()
		l := &bootLauncher{t: t, id: id, bootFile: bootFile, config: cfg, log: filepath.Join(s.dir, id+".log"), done: make(chan struct{})}
		s.boxes[id] = l
		go l.run()
	}
	t.Cleanup(func() {
		for _, id := range s.ids {
			s.boxes[id].stop()
		}
		if t.Failed() {
			for _, id := range s.ids {
				if b, err := os.ReadFile(s.boxes[id].log); err == nil {
					lines := strings.Split(strings.TrimSpace(string(b)), "\n")
					t.Logf("last log lines of %s:\n%s", id, strings.Join(lines[max(0, len(lines)-25):], "\n"))
				}
			}
		}
	})
	return s
}

type statusView struct {
	State  string               `json:"state"`
	Leader *struct{ ID string } `json:"leader"`
}

func (s *store) ready(id string) bool {
	resp, err := s.cli.Get("http://" + s.http[id] + "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func (s *store) waitAllReady(timeout time.Duration) {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	for _, id := range s.ids {
		for !s.ready(id) {
			if time.Now().After(deadline) {
				s.t.Fatalf("box %s not ready within %v", id, timeout)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

func (s *store) leader() string {
	for _, id := range s.ids {
		var st statusView
		if s.getJSON(id, "/api/cluster/status", &st) == nil && st.State == "leader" && s.ready(id) {
			return id
		}
	}
	return ""
}

func (s *store) waitLeader(timeout time.Duration) string {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if id := s.leader(); id != "" {
			return id
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("no leader within %v", timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *store) request(id, method, path, ctype string, body io.Reader) (int, []byte, error) {
	req, _ := http.NewRequest(method, "http://"+s.http[id]+path, body)
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	req.Header.Set("Accept-Language", "en")
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	cli := s.cli
	if ctype == "application/octet-stream" {
		cli = apitest.Client(s.t, &http.Client{Timeout: 2 * time.Minute})
	}
	resp, err := cli.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

func (s *store) getJSON(id, path string, out any) error {
	code, b, err := s.request(id, "GET", path, "", nil)
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("GET %s: %d %s", path, code, b)
	}
	return json.Unmarshal(b, out)
}

func (s *store) postJSON(id, path string, body any) (int, []byte) {
	s.t.Helper()
	raw, _ := json.Marshal(body)
	code, b, err := s.request(id, "POST", path, "application/json", bytes.NewReader(raw))
	if err != nil {
		s.t.Fatalf("POST %s on %s: %v", path, id, err)
	}
	return code, b
}

func (s *store) login(id string) {
	s.t.Helper()
	deadline := time.Now().Add(processWait)
	for {
		code, b := s.postJSON(id, "/api/staff/login", map[string]string{"password": staffPW})
		var r struct{ Token string }
		if code == http.StatusOK && json.Unmarshal(b, &r) == nil && r.Token != "" {
			s.token = r.Token
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("login on %s: %d %s", id, code, b)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// upload sends a bundle file to box id's console.
func (s *store) upload(id, path string) (int, []byte) {
	s.t.Helper()
	f, err := os.Open(path)
	if err != nil {
		s.t.Fatal(err)
	}
	defer f.Close()
	code, b, err := s.request(id, "POST", "/api/staff/update/bundle", "application/octet-stream", f)
	if err != nil {
		s.t.Fatalf("upload %s: %v", filepath.Base(path), err)
	}
	return code, b
}

type overview struct {
	Version string `json:"version"`
	Boxes   []struct {
		NodeID  string `json:"nodeId"`
		Version string `json:"version"`
		State   string `json:"state"`
		Ready   bool   `json:"ready"`
		Error   string `json:"error"`
		Message string `json:"message"`
	} `json:"boxes"`
	Offered update.Staged  `json:"offered"`
	Rollout *update.Record `json:"rollout"`
}

func (s *store) overview(id string) (overview, error) {
	var o overview
	err := s.getJSON(id, "/api/staff/update", &o)
	return o, err
}

func wantRefusal(t *testing.T, what string, code int, body []byte, status int, reason string) {
	t.Helper()
	var e struct {
		ReasonCode string `json:"reasonCode"`
		Message    string `json:"message"`
	}
	json.Unmarshal(body, &e)
	if code != status || e.ReasonCode != reason {
		t.Fatalf("%s: %d %s, want %d %s", what, code, body, status, reason)
	}
	t.Logf("%s: %d %s: %s", what, code, e.ReasonCode, e.Message)
}

// orderWatch sits under the bench's client: every 5xx answer, and the
// times orders were accepted (the longest gap between two).
type orderWatch struct {
	base     http.RoundTripper
	mu       sync.Mutex
	accepted []time.Time
	fivexx   []string
}

func (w *orderWatch) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := w.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	isOrder := req.Method == http.MethodPost && strings.HasPrefix(req.URL.Path, "/api/guest/sessions/") && strings.HasSuffix(req.URL.Path, "/orders")
	w.mu.Lock()
	if resp.StatusCode >= 500 {
		w.fivexx = append(w.fivexx, fmt.Sprintf("%s %s → %d", req.Method, req.URL.Path, resp.StatusCode))
	} else if isOrder && resp.StatusCode == http.StatusOK {
		w.accepted = append(w.accepted, time.Now())
	}
	w.mu.Unlock()
	return resp, err
}

// longestGap is the longest time without an accepted order between from
// and to.
func (w *orderWatch) longestGap(from, to time.Time) (time.Duration, time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	prev, gap, at := from, time.Duration(0), from
	for _, a := range w.accepted {
		if a.Before(from) || a.After(to) {
			continue
		}
		if d := a.Sub(prev); d > gap {
			gap, at = d, prev
		}
		prev = a
	}
	if d := to.Sub(prev); d > gap {
		gap, at = d, prev
	}
	return gap, at
}

// The whole update path under a storm of guest orders: the refusals
// (every bundle refusal through the console, and a start while a box is
// down), then the release index offers 1.1.0 and the manager taps once;
// the followers update one at a time, leadership moves, and the old
// leader's new system fails at once: it comes back on 1.0.0 by itself,
// the rollout stops with two boxes new and one old, and the store keeps
// taking orders. 0 lost, 0 duplicated, no 5xx.
func TestRollingUpdateUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("process test: three processes, two builds, a storm")
	}
	needRAUC(t)
	work := t.TempDir()
	oldBin := buildVersion(t, work, oldVersion)
	newBin := buildVersion(t, work, newVersion)
	keys, other := newSigner(t, "store"), newSigner(t, "other")
	good := keys.makeBundle(t, work, board, newVersion, newBin)
	goodRaw, _ := os.ReadFile(good)
	sum := sha256.Sum256(goodRaw)

	// The release index, on a local HTTP server (the internet in a test).
	var indexHits atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("GET /stable/index.json", func(w http.ResponseWriter, r *http.Request) {
		indexHits.Add(1)
		json.NewEncoder(w).Encode(update.ReleaseIndex{Version: newVersion, Compatible: board, URL: filepath.Base(good),
			SHA256: hex.EncodeToString(sum[:]), Size: int64(len(goodRaw))})
	})
	mux.HandleFunc("GET /stable/"+filepath.Base(good), func(w http.ResponseWriter, r *http.Request) { w.Write(goodRaw) })
	releases := httptest.NewServer(mux)
	defer releases.Close()

	s := newStore(t, oldBin, keys.Keyring, releases.URL+"/stable/index.json")
	s.waitAllReady(processWait)
	first := s.waitLeader(processWait)
	s.login(first)

	// Refusals, through the console of a follower.
	follower := s.ids[0]
	if follower == first {
		follower = s.ids[1]
	}
	code, b := s.upload(follower, unsignedBundle(t, work, board, newVersion, newBin))
	wantRefusal(t, "unsigned", code, b, http.StatusUnprocessableEntity, update.CodeUnsigned)
	code, b = s.upload(follower, other.makeBundle(t, t.TempDir(), board, newVersion, newBin))
	wantRefusal(t, "signed by another key", code, b, http.StatusUnprocessableEntity, update.CodeWrongKey)
	truncated := filepath.Join(work, "truncated.raucb")
	os.WriteFile(truncated, goodRaw[:len(goodRaw)*2/3], 0o644)
	code, b = s.upload(follower, truncated)
	wantRefusal(t, "truncated", code, b, http.StatusUnprocessableEntity, update.CodeCorrupt)
	code, b = s.upload(follower, keys.makeBundle(t, t.TempDir(), "masterorder-rpi-armhf", newVersion, newBin))
	wantRefusal(t, "another board", code, b, http.StatusUnprocessableEntity, update.CodeWrongBoard)
	code, b = s.upload(follower, keys.makeBundle(t, t.TempDir(), board, "0.9.0", oldBin))
	if code != http.StatusOK || !bytes.Contains(b, []byte(`"downgrade":true`)) {
		t.Fatalf("an older bundle is offered, marked as a downgrade: %d %s", code, b)
	}
	code, b = s.postJSON(follower, "/api/staff/update/start", map[string]any{})
	wantRefusal(t, "downgrade without confirmation", code, b, http.StatusConflict, update.CodeDowngrade)
	if indexHits.Load() != 0 {
		t.Fatalf("the release index was read %d times before the manager's tap", indexHits.Load())
	}

	// The offer from the release index, on the manager's tap.
	code, b = s.postJSON(follower, "/api/staff/update/check", map[string]any{})
	if code != http.StatusAccepted {
		t.Fatalf("check: %d %s", code, b)
	}
	deadline := time.Now().Add(processWait)
	for {
		o, err := s.overview(follower)
		if err == nil && o.Offered.State == update.StagedReady && o.Offered.Version == newVersion {
			break
		}
		if err == nil && o.Offered.State == update.StagedFailed || time.Now().After(deadline) {
			t.Fatalf("the release index's bundle was not offered: %+v %v", o.Offered, err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// A box down: refused, in words.
	down := s.ids[2]
	if down == follower {
		down = s.ids[1]
	}
	s.boxes[down].kill(true)
	for s.ready(down) {
		time.Sleep(20 * time.Millisecond)
	}
	code, b = s.postJSON(follower, "/api/staff/update/start", map[string]any{})
	wantRefusal(t, "a box is down", code, b, http.StatusConflict, update.CodeBoxDown)
	s.boxes[down].release()
	s.waitAllReady(processWait)

	// The rolling update under a storm. The box that leads now will be
	// updated last, and its new system fails there.
	first = s.waitLeader(processWait)
	s.boxes[first].broken.Store(true)
	storm := s.startStorm(t, 12, 6*time.Minute, 0.1)
	defer storm.stop()
	watch := storm.watch
	time.Sleep(2 * time.Second)
	started := time.Now()
	code, b = s.postJSON(follower, "/api/staff/update/start", map[string]any{})
	if code != http.StatusAccepted {
		t.Fatalf("start: %d %s", code, b)
	}
	// Follow it from any box's console, as the tablet would.
	var final *update.Record
	deadline = time.Now().Add(5 * time.Minute)
	lastSteps := ""
	for final == nil {
		for _, id := range s.ids {
			o, err := s.overview(id)
			if err != nil || o.Rollout == nil {
				continue
			}
			steps := fmt.Sprint(o.Rollout.State, " ", o.Rollout.Boxes)
			if steps != lastSteps {
				t.Logf("%6.1fs rollout (seen on %s): %s", time.Since(started).Seconds(), id, steps)
				lastSteps = steps
			}
			if o.Rollout.State != update.RolloutRunning {
				final = o.Rollout
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the rollout did not end within 5 minutes: %s", lastSteps)
		}
		time.Sleep(250 * time.Millisecond)
	}
	rolloutTime := time.Since(started)
	// The store keeps taking orders in the mixed state.
	time.Sleep(10 * time.Second)
	storm.stop()
	ended := time.Now()
	storm.check(t)
	watch.mu.Lock()
	fivexx := watch.fivexx
	accepted := len(watch.accepted)
	watch.mu.Unlock()
	if len(fivexx) > 0 {
		t.Errorf("%d answers were 5xx, first: %s", len(fivexx), fivexx[0])
	}
	gap, at := watch.longestGap(started, started.Add(rolloutTime))
	t.Logf("rollout %v; %d orders accepted from the start of the storm; longest gap in accepted orders during the rollout: %v (from %.1fs after the tap)",
		rolloutTime.Round(100*time.Millisecond), accepted, gap.Round(time.Millisecond), at.Sub(started).Seconds())
	_ = ended

	// Stopped on the old leader, rolled back, in words.
	if final.State != update.RolloutStopped || final.FailedBox != first || final.Error != update.CodeRolledBack {
		t.Fatalf("rollout ended %+v; want stopped on %s with %s", final, first, update.CodeRolledBack)
	}
	if final.Message == "" {
		t.Error("the stopped rollout is not worded")
	}
	t.Logf("the console says: %s (%s)", final.Message, final.Detail)
	s.waitAllReady(processWait)
	o, err := s.overview(first)
	if err != nil {
		t.Fatal(err)
	}
	versions := map[string]int{}
	for _, box := range o.Boxes {
		versions[box.Version]++
		want := newVersion
		if box.NodeID == first {
			want = oldVersion
			if box.State != update.StateRolledBack || box.Message == "" {
				t.Errorf("box %s: state %s %q, want rolledBack in words", box.NodeID, box.State, box.Message)
			}
		} else if box.State != update.StateCommitted {
			t.Errorf("box %s: state %s, want committed", box.NodeID, box.State)
		}
		if box.Version != want {
			t.Errorf("box %s runs %s, want %s", box.NodeID, box.Version, want)
		}
	}
	if versions[newVersion] != 2 || versions[oldVersion] != 1 {
		t.Errorf("versions after the rollout: %v; want two on %s and one on %s", versions, newVersion, oldVersion)
	}
	bf, _ := update.ReadBootFile(s.boxes[first].bootFile)
	s.boxes[first].mu.Lock()
	t.Logf("the failed box %s booted %v; its boot file now: default %s, booted %s", first, s.boxes[first].boots, bf.Default, bf.Booted)
	s.boxes[first].mu.Unlock()
	if bf.Booted != "A" || bf.Default != "A" {
		t.Errorf("the failed box boots slot %s (default %s), want its old slot A", bf.Booted, bf.Default)
	}
	// The mixed store takes a staff write through the old box as well.
	code, b = s.request2(first, "PUT", "/api/staff/menu/after-update", map[string]any{"name": "醤油", "category": "noodles", "price": 900, "available": true})
	if code != http.StatusOK {
		t.Errorf("a write through the old box in the mixed store: %d %s", code, b)
	}
}

func (s *store) request2(id, method, path string, body any) (int, []byte) {
	s.t.Helper()
	raw, _ := json.Marshal(body)
	code, b, err := s.request(id, method, path, "application/json", bytes.NewReader(raw))
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	return code, b
}

// startSignal is the bench's progress writer: its first line means the
// order phase has begun.
// guestStorm is the bench's guest storm against every box of a store
// (double taps on one key, a second key with the same cart, lost answers
// resent), every response seen by watch.
type guestStorm struct {
	watch *orderWatch
	ctx   context.Context
	stop  func() // ends the storm and waits for it (again: nothing)
	rep   *bench.Report
	err   error
}

// startStorm starts the storm and returns once it sends orders.
func (s *store) startStorm(t *testing.T, tables int, d time.Duration, faults float64) *guestStorm {
	t.Helper()
	g := &guestStorm{watch: &orderWatch{base: http.DefaultTransport}}
	var urls []string
	for _, id := range s.ids {
		urls = append(urls, "http://"+s.http[id])
	}
	cfg := bench.Config{URLs: urls, Tables: tables, GuestsPerTable: 3, Duration: d,
		DoubleTap: faults, KeyChange: faults, LostResponse: faults, StaffPassword: staffPW, RequestTimeout: 10 * time.Second,
		Transport: func(rt http.RoundTripper) http.RoundTripper { g.watch.base = rt; return apitest.Wrap(t, g.watch) }}
	sig := &startSignal{ch: make(chan struct{})}
	cfg.Progress = sig
	ctx, cancel := context.WithCancel(context.Background())
	g.ctx = ctx
	done := make(chan struct{})
	go func() { defer close(done); g.rep, g.err = bench.Run(ctx, cfg) }()
	g.stop = func() { cancel(); <-done }
	select {
	case <-sig.ch:
	case <-done:
		t.Fatalf("bench ended before its order phase: %v", g.err)
	}
	return g
}

// check requires, after stop, what every storm must show: no
// acknowledged order lost or taken twice, no bench problem, and some
// orders acknowledged.
func (g *guestStorm) check(t *testing.T) {
	t.Helper()
	if g.err != nil {
		t.Fatalf("bench: %v", g.err)
	}
	var sb strings.Builder
	g.rep.WriteText(&sb)
	t.Logf("bench report:\n%s", sb.String())
	if len(g.rep.Duplicates) > 0 || len(g.rep.Lost) > 0 {
		t.Errorf("duplicated %v, lost %v", g.rep.Duplicates, g.rep.Lost)
	}
	for _, p := range g.rep.Problems {
		t.Errorf("bench problem: %s", p)
	}
	if g.rep.Acknowledged == 0 {
		t.Error("no order was acknowledged")
	}
}

type startSignal struct {
	once sync.Once
	ch   chan struct{}
}

func (s *startSignal) Write(p []byte) (int, error) {
	s.once.Do(func() { close(s.ch) })
	return len(p), nil
}
