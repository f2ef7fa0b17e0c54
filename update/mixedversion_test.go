package update_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"masterorder/internal/filestate"
	"masterorder/orders"
	"masterorder/update"
)

// A store in mixed versions during a rolling restart never diverges
// (issue 41), with real old binaries: three boxes start on an older
// build (MO_OLD_BINARY, made by bench/mixedversion.sh from a git ref),
// take a mixed guest and staff load, and are restarted one at a time onto
// this working tree's build under that load, so that for a while old and
// new boxes apply the same entries; the load goes on a little on the
// all-new store. Raft never snapshots (a snapshot install overwrites a
// box's files and would hide a divergence). Then every box is stopped
// and its FSM files are read from disk: every bbolt bucket, key and value
// and every SQLite table's schema and rows must be the same on all three;
// and the bench finds no acknowledged order lost, none twice.
func TestMixedVersionStoreNeverDiverges(t *testing.T) {
	oldBin := os.Getenv("MO_OLD_BINARY")
	if oldBin == "" {
		t.Skip("needs an older build in MO_OLD_BINARY: run `bash bench/mixedversion.sh [REF]` (it builds REF, default d1458f3, and runs this test)")
	}
	if st, err := os.Stat(oldBin); err != nil || st.IsDir() {
		t.Fatalf("MO_OLD_BINARY=%s is not a binary: %v", oldBin, err)
	}
	work := t.TempDir()
	newBin := buildVersion(t, work, newVersion)
	// No snapshot in the whole run: far more entries than it makes.
	noSnapshots := "[raft]\nsnapshot_threshold = 1000000000\ntrailing_logs = 1000000000\nsnapshot_interval = \"1h\""
	// No bundle is verified here: the keyring is never read.
	s := newStore(t, oldBin, filepath.Join(work, "keyring-unused.pem"), "", noSnapshots)
	s.waitAllReady(processWait)
	s.login(s.waitLeader(processWait))
	oldVersion := s.versions(t)[s.ids[0]]
	for id, v := range s.versions(t) {
		if v != oldVersion || v == newVersion {
			t.Fatalf("box %s runs %q at the start; want the old build's version on all (box %s: %q), not %s", id, v, s.ids[0], oldVersion, newVersion)
		}
	}
	t.Logf("old build: %s (%s)", oldVersion, oldBin)

	// The guests: the bench's storm (double taps on one key, a second key
	// with the same cart, lost answers resent), checked for lost and
	// duplicated orders at the end.
	storm := s.startStorm(t, 8, 15*time.Minute, 0.15)
	watch := storm.watch
	// The staff and the rest of the guests' commands beside it.
	side := &sideLoad{s: s, counts: map[string]int{}}
	side.setup(t)
	sideDone := make(chan struct{})
	go func() { defer close(sideDone); side.run(storm.ctx) }()
	stopLoad := func() {
		storm.stop()
		<-sideDone
	}
	defer stopLoad()

	time.Sleep(15 * time.Second) // all old
	// One box at a time onto the new build, the leader last (as a
	// rollout does): its boot file's default slot now holds the new
	// binary, and a clean stop restarts it there.
	var order []string
	leader := s.waitLeader(processWait)
	for _, id := range s.ids {
		if id != leader {
			order = append(order, id)
		}
	}
	order = append(order, leader)
	raw, err := os.ReadFile(newBin)
	if err != nil {
		t.Fatal(err)
	}
	var mixedFrom, mixedTo uint64
	var mixedStart, mixedEnd time.Time
	sideAtMixed := 0
	for n, id := range order {
		l := s.boxes[id]
		bf, err := update.ReadBootFile(l.bootFile)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(bf.Slots["B"], raw, 0o755); err != nil {
			t.Fatal(err)
		}
		bf.Default = "B"
		if err := update.WriteBootFile(l.bootFile, bf); err != nil {
			t.Fatal(err)
		}
		if n == len(order)-1 {
			mixedTo, mixedEnd = s.applied(t), time.Now()
		}
		if !l.term(false, processWait) {
			t.Fatalf("box %s did not stop within %v of SIGTERM", id, processWait)
		}
		s.waitAllReady(processWait)
		s.waitVersion(t, id, newVersion)
		t.Logf("box %s restarted onto %s", id, newVersion)
		if n == 0 {
			// Old and new boxes apply the same entries from here.
			mixedFrom, mixedStart = s.applied(t), time.Now()
			sideAtMixed = side.total()
			vs := map[string]int{}
			for _, v := range s.versions(t) {
				vs[v]++
			}
			if vs[newVersion] != 1 || vs[oldVersion] != 2 {
				t.Fatalf("versions with one box restarted: %v", vs)
			}
		}
		if n < len(order)-1 {
			time.Sleep(20 * time.Second) // mixed
		}
	}
	sideMixed := side.total() - sideAtMixed
	// All new: the leader raises the store's feature level to the new
	// build's once every box reports that build, and from then on the
	// load runs the new build's newest command versions, which the files
	// check below then covers too.
	allNew := time.Now()
	for deadline := allNew.Add(processWait); ; time.Sleep(200 * time.Millisecond) {
		var st struct {
			FeatureLevel uint32 `json:"featureLevel"`
			BuildLevel   uint32 `json:"buildLevel"`
		}
		if err := s.getJSON(leader, "/api/cluster/status", &st); err == nil && st.BuildLevel > 0 && st.FeatureLevel == st.BuildLevel {
			t.Logf("the store at the new build's feature level %d %v after the last restart", st.FeatureLevel, time.Since(allNew).Round(100*time.Millisecond))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the store's feature level never reached the new build's: %+v", st)
		}
	}
	time.Sleep(15 * time.Second) // all new, at the new level
	stopLoad()
	storm.check(t)
	if side.failure != "" {
		t.Errorf("side load: %s", side.failure)
	}
	kinds := side.kinds()
	t.Logf("side load (staff and guest commands beside the bench): %s", kinds)
	for _, want := range []string{"session opened", "order admitted", "order replayed", "same cart, second key", "guest call", "status COOKING",
		"status READY", "order cancelled", "stock set", "menu put", "checkout begun", "checkout cancelled", "checked out"} {
		if side.count(want) == 0 {
			t.Errorf("the side load has no %q: %s", want, kinds)
		}
	}
	accepted := watch.acceptedBetween(mixedStart, mixedEnd)
	t.Logf("mixed versions for %v: log entries %d..%d (%d) applied by old and new boxes alike; %d of the bench's order POSTs answered 200 (new or replayed) and %d side-load commands answered in that time",
		mixedEnd.Sub(mixedStart).Round(100*time.Millisecond), mixedFrom, mixedTo, mixedTo-mixedFrom, accepted, sideMixed)
	if mixedTo <= mixedFrom || accepted == 0 {
		t.Errorf("nothing was applied while the versions were mixed (entries %d..%d, %d orders)", mixedFrom, mixedTo, accepted)
	}

	// The files, read from disk with every box stopped. A command
	// committed between the convergence and the stops (the leader's
	// housekeeping) can leave one box an entry behind: then all start
	// again and are read again.
	dataDirs := map[string]string{}
	for _, id := range s.ids {
		fc, err := orders.LoadConfig(s.boxes[id].config)
		if err != nil {
			t.Fatal(err)
		}
		dataDirs[id] = fc.NodeConfig.DataDir
	}
	for attempt := 1; ; attempt++ {
		s.waitConverged(t, processWait)
		var wg sync.WaitGroup
		stopped := make([]bool, len(s.ids))
		for i, id := range s.ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				stopped[i] = s.boxes[id].term(true, processWait)
			}()
		}
		wg.Wait()
		for i, ok := range stopped {
			if !ok {
				t.Fatalf("box %s did not stop within %v of SIGTERM", s.ids[i], processWait)
			}
		}
		dumps := map[string]string{}
		for _, id := range s.ids {
			if snaps, _ := filepath.Glob(filepath.Join(dataDirs[id], "raft", "snapshots", "*")); len(snaps) > 0 {
				t.Fatalf("box %s holds Raft snapshots %v: a snapshot may have been installed and hidden a divergence", id, snaps)
			}
			text, err := filestate.Read(dataDirs[id])
			if err != nil {
				t.Fatalf("box %s: %v", id, err)
			}
			dumps[id] = text
		}
		diff := ""
		for _, id := range s.ids[1:] {
			if diff = filestate.Diff(dumps[s.ids[0]], dumps[id], "box "+s.ids[0], "box "+id); diff != "" {
				break
			}
		}
		if diff == "" {
			text := dumps[s.ids[0]]
			t.Logf("the three boxes' files hold the same %d lines (%d bytes)", strings.Count(text, "\n"), len(text))
			for _, want := range []string{"sqlite table orders ", "sqlite table sessions ", "sqlite table audit ", "sqlite table outbox ", "sqlite table sqlite_sequence ", "bolt bucket "} {
				if !strings.Contains(text, want) {
					t.Errorf("the files' text has no %q: it reads less than it should", want)
				}
			}
			return
		}
		if attempt == 3 {
			t.Fatalf("the boxes' files differ after %d tries: %s", attempt, diff)
		}
		t.Logf("try %d: %s; starting again", attempt, diff)
		for _, id := range s.ids {
			s.boxes[id].release()
		}
		s.waitAllReady(processWait)
	}
}

// versions is each box's running version, from the update console.
func (s *store) versions(t *testing.T) map[string]string {
	t.Helper()
	deadline := time.Now().Add(processWait)
	for {
		for _, id := range s.ids {
			o, err := s.overview(id)
			if err != nil || len(o.Boxes) != len(s.ids) {
				continue
			}
			vs := map[string]string{}
			for _, b := range o.Boxes {
				if b.Version != "" {
					vs[b.NodeID] = b.Version
				}
			}
			if len(vs) == len(s.ids) {
				return vs
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the update console did not show every box's version within %v", processWait)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitVersion waits until the update console says box id runs version.
func (s *store) waitVersion(t *testing.T, id, version string) {
	t.Helper()
	deadline := time.Now().Add(processWait)
	for {
		v := s.versions(t)[id]
		if v == version {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("box %s runs %q after its restart, want %s", id, v, version)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

type clusterStatus struct {
	AppliedIndex uint64 `json:"appliedIndex"`
	CommitIndex  uint64 `json:"commitIndex"`
}

// applied is the leader's applied index.
func (s *store) applied(t *testing.T) uint64 {
	t.Helper()
	var st clusterStatus
	if err := s.getJSON(s.waitLeader(processWait), "/api/cluster/status", &st); err != nil {
		t.Fatal(err)
	}
	return st.AppliedIndex
}

// waitConverged waits until every box has applied the same index twice
// in a row.
func (s *store) waitConverged(t *testing.T, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	same := 0
	for same < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the boxes did not converge within %v", timeout)
		}
		time.Sleep(250 * time.Millisecond)
		idx := map[uint64]bool{}
		for _, id := range s.ids {
			var st clusterStatus
			if err := s.getJSON(id, "/api/cluster/status", &st); err != nil {
				idx[0] = true
				continue
			}
			idx[st.AppliedIndex] = true
		}
		if len(idx) == 1 && !idx[0] {
			same++
		} else {
			same = 0
		}
	}
}

// acceptedBetween counts the orders accepted between from and to.
func (w *orderWatch) acceptedBetween(from, to time.Time) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, a := range w.accepted {
		if !a.Before(from) && !a.After(to) {
			n++
		}
	}
	return n
}

// sideLoad is the rest of what a store applies, beside the bench's
// guests: staff open table sessions, guests there order (the same key
// again: a replay; the same cart under a second key), call staff, the
// kitchen moves and cancels orders, staff set stock and put the menu,
// and check out (begun, cancelled, then done). It goes round the boxes,
// and sends a request again to the next box while one is restarting.
type sideLoad struct {
	s       *store
	n       int
	mu      sync.Mutex
	counts  map[string]int
	failure string
}

const sideItem = "mv-gyoza"

func (w *sideLoad) setup(t *testing.T) {
	t.Helper()
	code, b := w.s.request2(w.s.ids[0], "PUT", "/api/staff/menu/"+sideItem, map[string]any{"name": "餃子", "nameEn": "Gyoza", "category": "sides", "price": 450, "available": true})
	if code != http.StatusOK {
		t.Fatalf("side load menu: %d %s", code, b)
	}
	code, b = w.s.request2(w.s.ids[0], "PUT", "/api/staff/stock/"+sideItem, map[string]any{"quantity": 100000})
	if code != http.StatusOK {
		t.Fatalf("side load stock: %d %s", code, b)
	}
}

func (w *sideLoad) add(kind string) {
	w.mu.Lock()
	w.counts[kind]++
	w.mu.Unlock()
}

func (w *sideLoad) count(kind string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.counts[kind]
}

func (w *sideLoad) total() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, c := range w.counts {
		n += c
	}
	return n
}

func (w *sideLoad) kinds() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var ks []string
	for k, c := range w.counts {
		ks = append(ks, fmt.Sprintf("%s %d", k, c))
	}
	sort.Strings(ks)
	return strings.Join(ks, ", ")
}

// call sends one request, to the next box after a transport error or a
// 5xx (a box restarting, a leader moving), for up to a minute; it
// answers the last status and body (0 when the context ended first).
func (w *sideLoad) call(ctx context.Context, method, path string, hdr http.Header, body any) (int, []byte) {
	var raw []byte
	if body != nil {
		raw, _ = json.Marshal(body)
	}
	for deadline := time.Now().Add(processWait); ; {
		w.n++
		id := w.s.ids[w.n%len(w.s.ids)]
		var rd io.Reader
		if raw != nil {
			rd = bytes.NewReader(raw)
		}
		req, _ := http.NewRequestWithContext(ctx, method, "http://"+w.s.http[id]+path, rd)
		if raw != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		req.Header.Set("Accept-Language", "en")
		for k, v := range hdr {
			req.Header[k] = v
		}
		if hdr == nil {
			req.Header.Set("Authorization", "Bearer "+w.s.token)
		}
		resp, err := w.s.cli.Do(req)
		code, b := 0, []byte(nil)
		if err == nil {
			b, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			code = resp.StatusCode
		}
		if ctx.Err() != nil {
			return 0, nil
		}
		if err == nil && code < 500 {
			return code, b
		}
		if time.Now().After(deadline) {
			return code, b
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// fail records the first unexpected answer; the load goes on.
func (w *sideLoad) fail(format string, args ...any) {
	w.mu.Lock()
	if w.failure == "" {
		w.failure = fmt.Sprintf(format, args...)
	}
	w.mu.Unlock()
}

// randomKey is an Idempotency-Key as a phone makes one (a UUID v4).
func randomKey() string {
	b := make([]byte, 16)
	rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func (w *sideLoad) run(ctx context.Context) {
	for round := 0; ctx.Err() == nil; round++ {
		w.table(ctx, round)
		w.mu.Lock()
		failed := w.failure != ""
		w.mu.Unlock()
		if failed {
			return
		}
	}
}

// table is one table's visit, from its session's opening to its checkout.
func (w *sideLoad) table(ctx context.Context, round int) {
	var sess struct {
		SessionID string `json:"sessionId"`
		PIN       string `json:"pin"`
	}
	code, b := w.call(ctx, "POST", "/api/staff/sessions", nil, map[string]string{"tableId": fmt.Sprintf("MV%d", round)})
	if code == 0 {
		return
	}
	if code != http.StatusOK || json.Unmarshal(b, &sess) != nil || sess.SessionID == "" {
		w.fail("open session: %d %s", code, b)
		return
	}
	w.add("session opened")
	phone := "" // a phone per order: one phone's cooldown would refuse the next
	guest := func(key string) http.Header {
		h := http.Header{}
		h.Set("X-Session-PIN", sess.PIN)
		h.Set("X-MasterOrder-Client-Id", "guest-mv-"+phone)
		if key != "" {
			h.Set("Idempotency-Key", key)
		}
		return h
	}
	ordersPath := "/api/guest/sessions/" + sess.SessionID + "/orders"
	var ids []int64
	for i := range 3 {
		phone = randomKey()
		cart := map[string]any{"items": []map[string]any{{"menuId": sideItem, "quantity": 1 + (round+i)%4, "toppings": []string{}}}}
		key := randomKey()
		var ok struct {
			OrderID          int64 `json:"orderId"`
			IdempotentReplay bool  `json:"idempotentReplay"`
		}
		code, b := w.call(ctx, "POST", ordersPath, guest(key), cart)
		switch {
		case code == 0:
			return
		case code == http.StatusOK && json.Unmarshal(b, &ok) == nil:
			w.add("order admitted")
			ids = append(ids, ok.OrderID)
		case code == http.StatusTooManyRequests || code == http.StatusConflict:
			w.add("order refused by the gate")
			time.Sleep(time.Second)
			continue
		default:
			w.fail("order: %d %s", code, b)
			return
		}
		// The same key again: the same order, replayed.
		code, b = w.call(ctx, "POST", ordersPath, guest(key), cart)
		if code == 0 {
			return
		}
		var again struct {
			OrderID          int64 `json:"orderId"`
			IdempotentReplay bool  `json:"idempotentReplay"`
		}
		if code != http.StatusOK || json.Unmarshal(b, &again) != nil || again.OrderID != ok.OrderID || !again.IdempotentReplay {
			w.fail("the same key again: %d %s (order %d)", code, b, ok.OrderID)
			return
		}
		w.add("order replayed")
		// The same cart under a second key: refused by the gate (the
		// cooldown, the payload window) or, past them, a second order.
		code, b = w.call(ctx, "POST", ordersPath, guest(randomKey()), cart)
		switch {
		case code == 0:
			return
		case code == http.StatusOK || code == http.StatusConflict || code == http.StatusTooManyRequests:
			w.add("same cart, second key")
		default:
			w.fail("the same cart under a second key: %d %s", code, b)
			return
		}
		time.Sleep(1100 * time.Millisecond) // past the session's burst window
	}
	if code, b := w.call(ctx, "POST", "/api/guest/sessions/"+sess.SessionID+"/calls", guest(""), map[string]string{"kind": []string{"staff", "bill", "water"}[round%3]}); code == 0 {
		return
	} else if code != http.StatusOK && code != http.StatusTooManyRequests {
		w.fail("guest call: %d %s", code, b)
		return
	}
	w.add("guest call")
	// The kitchen: the first order cooked and ready, the last cancelled
	// (its stock put back).
	steps := []struct {
		i      int
		status string
	}{{0, "COOKING"}, {0, "READY"}, {len(ids) - 1, "CANCELLED"}}
	for _, st := range steps {
		if len(ids) < 2 {
			break
		}
		code, b := w.call(ctx, "PATCH", fmt.Sprintf("/api/staff/orders/%d", ids[st.i]), nil, map[string]string{"status": st.status})
		if code == 0 {
			return
		}
		// 409: a request sent again after a lost answer finds it moved.
		if code != http.StatusOK && code != http.StatusConflict {
			w.fail("order %d to %s: %d %s", ids[st.i], st.status, code, b)
			return
		}
		if st.status == "CANCELLED" {
			w.add("order cancelled")
		} else {
			w.add("status " + st.status)
		}
	}
	if code, b := w.call(ctx, "PUT", "/api/staff/stock/"+sideItem, nil, map[string]any{"quantity": 100000 - round}); code == 0 {
		return
	} else if code != http.StatusOK {
		w.fail("stock: %d %s", code, b)
		return
	}
	w.add("stock set")
	if round%2 == 0 {
		if code, b := w.call(ctx, "PUT", "/api/staff/menu/mv-special", nil, map[string]any{"name": "本日の一品", "nameEn": "Today's special", "category": "sides", "price": 300 + round, "available": true}); code == 0 {
			return
		} else if code != http.StatusOK {
			w.fail("menu: %d %s", code, b)
			return
		}
		w.add("menu put")
	}
	checkout := "/api/staff/sessions/" + sess.SessionID + "/checkout"
	for _, step := range []struct{ path, kind string }{{checkout + "/begin", "checkout begun"}, {checkout + "/cancel", "checkout cancelled"}, {checkout, "checked out"}} {
		var body any // begin and cancel take none
		if step.path == checkout {
			body = map[string]string{"payment": "cash"}
		}
		code, b := w.call(ctx, "POST", step.path, nil, body)
		if code == 0 {
			return
		}
		// Sent again after a lost answer (a box restarting), a begin or
		// cancel may find the lock in its new state (409), a checkout the
		// session closed (410).
		if code != http.StatusOK && !(code == http.StatusGone && step.path == checkout) && !(code == http.StatusConflict && step.path != checkout) {
			w.fail("%s: %d %s", step.kind, code, b)
			return
		}
		w.add(step.kind)
	}
}
