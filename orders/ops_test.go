package orders_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"masterorder/api/apitest"
	"masterorder/node"
	"masterorder/node/nodetest"
	"masterorder/orders"
	"masterorder/orders/orderstest"
)

// Operations through the HTTP API: membership calls, backup and restore,
// /metrics, housekeeping. The cluster-level behaviour of membership is in
// node/membership_test.go; here the staff endpoints and their answers.

func TestMembersEndpoints(t *testing.T) {
	s := startStore(t, 3, nil)
	d := fmt.Sprintf("127.0.0.1:%d", nodetest.FreePort(t))
	dHTTP := fmt.Sprintf("127.0.0.1:%d", nodetest.FreePort(t))
	body := map[string]any{"id": "d", "raftAddr": d, "httpAddr": dHTTP, "voter": false}

	if r := s.do(1, "POST", "/api/staff/cluster/members", nil, body); r.Status != 401 {
		t.Fatalf("without a token: %d %s", r.Status, r.Body)
	}
	if r := s.do(1, "GET", "/api/staff/backup", nil, nil); r.Status != 401 {
		t.Fatalf("backup without a token: %d %s", r.Status, r.Body)
	}
	for _, bad := range []any{`{"id":"d"`, map[string]any{"id": "d", "raftAddr": d, "httpAddr": dHTTP, "extra": 1},
		map[string]any{"id": "no such!", "raftAddr": d, "httpAddr": dHTTP}, map[string]any{"id": "d", "raftAddr": "nowhere", "httpAddr": dHTTP}} {
		if r := s.staff(1, "POST", "/api/staff/cluster/members", bad); r.Status != 400 {
			t.Fatalf("bad body %v: %d %s", bad, r.Status, r.Body)
		}
	}

	// A non-voter (box d is not even running: it takes no part in quorum).
	var out struct{ Nodes []node.MemberStatus }
	_, f := s.c.Follower()
	fi := 0
	for i, n := range s.c.Nodes {
		if n == f {
			fi = i
		}
	}
	s.mustStaff(fi, "POST", "/api/staff/cluster/members", body).json(t, &out)
	got := map[string]node.MemberStatus{}
	for _, m := range out.Nodes {
		got[m.ID] = m
	}
	if m := got["d"]; m.Suffrage != "nonvoter" || m.HTTPAddr != dHTTP || m.RaftAddr != d || len(out.Nodes) != 4 {
		t.Fatalf("after add: %+v", out.Nodes)
	}
	// Every node knows d's web address (CORS lets d's pages call them)
	// once it has applied the change: the answer came after node fi did.
	added := s.c.Nodes[fi].FSM().Applied()
	for i := range s.c.Nodes {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := s.c.Nodes[i].FSM().WaitApplied(ctx, added)
		cancel()
		if err != nil {
			t.Fatalf("node %d did not apply index %d: %v", i, added, err)
		}
		r := s.do(i, "OPTIONS", "/api/guest/sessions/x/orders", map[string]string{"Origin": "http://" + dHTTP, "Access-Control-Request-Method": "POST"}, nil)
		if r.Header.Get("Access-Control-Allow-Origin") != "http://"+dHTTP {
			t.Fatalf("node %d does not allow d's origin: %d %v", i, r.Status, r.Header)
		}
	}
	r := s.staff(0, "POST", "/api/staff/cluster/members", map[string]any{"id": "d", "raftAddr": "127.0.0.1:1", "httpAddr": dHTTP})
	if r.Status != 409 || r.reason(t) != "MEMBER_EXISTS" {
		t.Fatalf("d at another address: %d %s", r.Status, r.Body)
	}
	s.mustStaff(2, "POST", "/api/staff/cluster/members/d/promote", nil).json(t, &out)
	for _, m := range out.Nodes {
		if m.ID == "d" && m.Suffrage != "voter" {
			t.Fatalf("after promote: %+v", out.Nodes)
		}
	}
	if r := s.staff(0, "POST", "/api/staff/cluster/members/nobody/promote", nil); r.Status != 404 || r.reason(t) != "MEMBER_NOT_FOUND" {
		t.Fatalf("promote nobody: %d %s", r.Status, r.Body)
	}
	// d is a voter that does not answer: taking a live box out now would
	// leave 3 voters of which 2 answer — still a majority; a second one not.
	s.mustStaff(0, "DELETE", "/api/staff/cluster/members/d", nil).json(t, &out)
	if len(out.Nodes) != 3 {
		t.Fatalf("after remove: %+v", out.Nodes)
	}
	if r := s.staff(1, "DELETE", "/api/staff/cluster/members/d", nil); r.Status != 404 || r.reason(t) != "MEMBER_NOT_FOUND" {
		t.Fatalf("remove d again: %d %s", r.Status, r.Body)
	}
	r = s.do(1, "DELETE", "/api/staff/cluster/members/d", map[string]string{"Authorization": "Bearer " + s.token, "Accept-Language": "en"}, nil)
	if !strings.Contains(string(r.Body), "no member d") {
		t.Fatalf("English message: %s", r.Body)
	}
}

// tables reads every domain table of a node's SQLite replica, row by row
// (the FSM's own bookkeeping table excluded).
func tables(t *testing.T, n *node.Node) map[string][]string {
	t.Helper()
	return orders.FSMTables(t, n.FSM())
}

func TestBackupRestoreRoundTrip(t *testing.T) {
	s := startStore(t, 3, nil)
	s.seedMenu()
	sess := s.openSession("T1")
	g := s.guest(sess)
	if r := g.order(1, newKey(), cart(line("ramen", 2, "egg"), line("gyoza", 1))); r.Status != 200 {
		t.Fatalf("order: %d %s", r.Status, r.Body)
	}
	closed := s.guest(s.openSession("T2"))
	if r := closed.order(2, newKey(), cart(line("tea", 3))); r.Status != 200 {
		t.Fatalf("order: %d %s", r.Status, r.Body)
	}
	s.mustStaff(0, "POST", "/api/staff/sessions/"+closed.sess.ID+"/checkout", nil)

	// The backup, from a follower, straight after the writes.
	_, f := s.c.Follower()
	fi := 0
	for i, n := range s.c.Nodes {
		if n == f {
			fi = i
		}
	}
	req, _ := http.NewRequest("GET", s.url(fi)+"/api/staff/backup", nil)
	req.Header.Set("Authorization", "Bearer "+s.token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	backup, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("backup: %d %v", res.StatusCode, err)
	}
	sum := sha256.Sum256(backup)
	if got := res.Trailer.Get(orders.BackupDigestTrailer); got != hex.EncodeToString(sum[:]) {
		t.Fatalf("digest trailer %q does not match the %d bytes", got, len(backup))
	}
	if idx, _ := strconv.ParseUint(res.Header.Get(orders.BackupIndexHeader), 10, 64); idx == 0 {
		t.Fatalf("no applied index header: %v", res.Header)
	}
	want := tables(t, f)
	if len(want["orders"]) != 2 || len(want["menu_items"]) != 3 || len(want["sessions"]) != 2 {
		t.Fatalf("source tables: %v", want)
	}

	// A brand-new single box from the backup.
	cfg := nodetest.Configs(t, 1, t.TempDir())[0]
	cfg.ShopID = s.c.Configs[0].ShopID
	info, err := node.RestoreBackup(cfg, orders.NodeOptions(), bytes.NewReader(backup))
	if err != nil {
		t.Fatalf("restore: %v", err)
	}
	if _, err := node.RestoreBackup(cfg, orders.NodeOptions(), bytes.NewReader(backup)); err == nil {
		t.Fatal("a second restore into the same data dir was accepted")
	}
	st := orderstest.StartConfigs(t, []orders.FileConfig{{NodeConfig: cfg, Config: orderstest.Domain()}}, nil, orders.Options{StaffPasswordHash: passwordHash(t)})
	one := &store{t: t, c: st.Cluster, svcs: st.Svcs, http: s.http}
	restored := one.c.Nodes[0]
	if got := tables(t, restored); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("restored tables differ:\n got %v\nwant %v", got, want)
	}
	one.token = one.login(0)
	if a, b := one.mustStaff(0, "GET", "/api/staff/menu", nil).Body, s.mustStaff(fi, "GET", "/api/staff/menu", nil).Body; !bytes.Equal(a, b) {
		t.Fatalf("menus differ:\n%s\n%s", a, b)
	}
	g.s = one
	if h := g.history(0, ""); len(h) != 1 || h[0].TotalPrice != 2*(900+120)+450 {
		t.Fatalf("restored guest history: %+v", h)
	}
	closed.s = one
	if r := closed.order(0, newKey(), cart(line("tea", 1))); r.Status != 410 {
		t.Fatalf("closed session on the restored box: %d %s", r.Status, r.Body)
	}
	// The log continues after the backup's index: a new order is applied,
	// not skipped.
	g2 := one.guest(sess)
	r := g2.order(0, newKey(), cart(line("tea", 1)))
	if r.Status != 200 {
		t.Fatalf("order on the restored box: %d %s", r.Status, r.Body)
	}
	if last := restored.Raft().LastIndex(); last <= info.Index {
		t.Fatalf("restored log at %d, backup index %d", last, info.Index)
	}
	if h := g2.history(0, ""); len(h) != 2 {
		t.Fatalf("history after a new order: %+v", h)
	}
	// And it restarts from its own files.
	one.c.StopNode(0)
	one.c.StartNode(0)
	one.c.WaitLeader(10 * time.Second)
	if h := g2.history(0, ""); len(h) != 2 {
		t.Fatalf("history after restart: %+v", h)
	}
}

// metric returns the value of one series in a Prometheus text answer.
func metric(t *testing.T, text, series string) float64 {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return v
		}
	}
	t.Fatalf("series %s missing", series)
	return 0
}

func TestMetrics(t *testing.T) {
	s := startStore(t, 3, func(_ int, c *orders.FileConfig) { c.Admission.SessionBurst.Duration = 0 })
	s.seedMenu()
	_, f := s.c.Follower()
	fi := 0
	for i, n := range s.c.Nodes {
		if n == f {
			fi = i
		}
	}
	g := s.guest(s.openSession("M1"))
	first := g.client
	expect := func(key string, body any, status int) {
		t.Helper()
		if r := g.order(fi, key, body); r.Status != status {
			t.Fatalf("order %v: %d %s, want %d", body, r.Status, r.Body, status)
		}
	}
	k := newKey()
	expect(k, cart(line("ramen", 1)), 200) // admitted
	expect(k, cart(line("ramen", 1)), 200) // replay: same key
	g.client = newClient()
	expect(newKey(), cart(line("ramen", 1)), 200)      // replay: same cart within the window
	expect("not-a-key", cart(line("ramen", 1)), 400)   // INVALID_IDEMPOTENCY_KEY, before any command
	expect(newKey(), cart(line("ramen", 1, "x")), 400) // INVALID_ORDER
	expect(newKey(), cart(line("gyoza", 11)), 409)     // OUT_OF_STOCK, decided in Apply
	g.client = first
	expect(newKey(), cart(line("tea", 2)), 429) // COOLDOWN_ACTIVE
	g.client = newClient()
	expect(newKey(), cart(line("gyoza", 1)), 200) // admitted
	// A kitchen screen connected to this node.
	req, _ := http.NewRequest("GET", s.url(fi)+"/api/kitchen/stream?token="+s.token, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, err := apitest.Client(t, nil).Do(req.WithContext(ctx))
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("kitchen stream: %v %v", err, res)
	}
	defer res.Body.Close()
	lastSync := time.Now().Add(-90 * time.Second).UTC().Format(time.RFC3339Nano)
	s.svcs[fi].SetCloudStatus(orders.CloudSyncStatus{Enabled: true, Online: false, Pending: 3, LastSyncAt: &lastSync})
	if err := f.Raft().Snapshot().Error(); err != nil {
		t.Fatalf("snapshot: %v", err)
	}

	scrape := func(i int) string {
		r := s.do(i, "GET", "/metrics", nil, nil)
		if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/plain") {
			t.Fatalf("/metrics on node %d: %d %v", i, r.Status, r.Header)
		}
		return string(r.Body)
	}
	text := scrape(fi)
	for series, want := range map[string]float64{
		`masterorder_orders_admitted_total{source="guest"}`:                                  2,
		`masterorder_orders_replayed_total{kind="key",source="guest"}`:                       1,
		`masterorder_orders_replayed_total{kind="payload",source="guest"}`:                   1,
		`masterorder_orders_rejected_total{reason="INVALID_IDEMPOTENCY_KEY",source="guest"}`: 1,
		`masterorder_orders_rejected_total{reason="INVALID_ORDER",source="guest"}`:           1,
		`masterorder_orders_rejected_total{reason="OUT_OF_STOCK",source="guest"}`:            1,
		`masterorder_orders_rejected_total{reason="COOLDOWN_ACTIVE",source="guest"}`:         1,
		`masterorder_order_request_seconds_count{outcome="admitted",source="guest"}`:         2,
		`masterorder_order_request_seconds_count{outcome="replayed",source="guest"}`:         2,
		`masterorder_order_request_seconds_count{outcome="rejected",source="guest"}`:         4,
		`masterorder_raft_state{state="follower"}`:                                           1,
		`masterorder_raft_state{state="leader"}`:                                             0,
		`masterorder_node_ready`:                                                             1,
		`masterorder_cluster_voters`:                                                         3,
		`masterorder_sse_clients`:                                                            1,
		`masterorder_cloudsync_pending`:                                                      3,
		`masterorder_cloudsync_online`:                                                       0,
		`masterorder_snapshot_persist_seconds_count`:                                         1,
		`masterorder_propose_retries_total`:                                                  0,
	} {
		if got := metric(t, text, series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
	for _, series := range []string{"masterorder_raft_term", "masterorder_raft_commit_index", "masterorder_raft_applied_index",
		"masterorder_raft_last_log_index", "masterorder_fsm_apply_seconds_count", "masterorder_fsm_applied_entries_total",
		"masterorder_snapshot_size_bytes", "masterorder_forwarded_proposals_total", "process_resident_memory_bytes",
		"masterorder_raft_log_writes_total",
		"masterorder_order_request_seconds_sum{outcome=\"admitted\",source=\"guest\"}"} {
		if got := metric(t, text, series); got <= 0 {
			t.Errorf("%s = %v, want > 0", series, got)
		}
	}
	// Every log write is timed (one may be under way as the page is read:
	// counted at its start, timed at its end).
	if w, n, sum := metric(t, text, "masterorder_raft_log_writes_total"), metric(t, text, "masterorder_raft_log_write_seconds_count"),
		metric(t, text, "masterorder_raft_log_write_seconds_sum"); n < w-1 || n > w || sum <= 0 {
		t.Errorf("log writes %v, timed %v (%v s in all)", w, n, sum)
	}
	if lag := metric(t, text, "masterorder_cloudsync_lag_seconds"); lag < 90 || lag > 600 {
		t.Errorf("cloud sync lag %v, want about 90 s", lag)
	}
	if c, a := metric(t, text, "masterorder_raft_commit_index"), metric(t, text, "masterorder_raft_applied_index"); a > c+1 || a < 10 {
		t.Errorf("commit %v applied %v", c, a)
	}
	li, _ := s.c.WaitLeader(5 * time.Second)
	lt := scrape(li)
	if metric(t, lt, `masterorder_raft_state{state="leader"}`) != 1 || metric(t, lt, "masterorder_raft_commit_seconds_count") < 5 {
		t.Errorf("leader metrics:\n%s", grep(lt, "masterorder_raft"))
	}
	// Each node has its own registry: the leader took no order requests.
	if strings.Contains(lt, `masterorder_orders_admitted_total{source="guest"}`) {
		t.Errorf("the leader counts orders it did not take:\n%s", grep(lt, "masterorder_orders"))
	}
}

func grep(text, prefix string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// Housekeeping moves closed sessions' orders to orders_archive, on every
// node alike, and judges retention on FSM time: the cluster starts under a
// leader whose wall clock is 50 years behind (every row it writes carries
// that date), then a box with a correct clock leads; neither deletes a row
// younger than the retention in FSM time (all of them, here).
func TestHousekeepingArchivesAndPrunes(t *testing.T) {
	offset := make([]atomic.Int64, 3)
	for i := range offset {
		offset[i].Store(int64(-50 * 365 * 24 * time.Hour))
	}
	st := orderstest.Start(t, 3, func(_ int, c *orders.FileConfig) { c.Admission.SessionBurst.Duration = 0 }, func(i int) node.Options {
		o := orders.NodeOptions()
		o.WallClock = func() time.Time { return time.Now().Add(time.Duration(offset[i].Load())) }
		return o
	}, orders.Options{StaffPasswordHash: passwordHash(t)})
	s := &store{t: t, c: st.Cluster, svcs: st.Svcs, http: &http.Client{Timeout: 15 * time.Second}}
	first, _ := s.c.WaitLeader(5 * time.Second)
	for i := range offset {
		if i != first {
			offset[i].Store(0) // the others' clocks are right
		}
	}
	s.token = s.login(0)
	s.seedMenu()
	open := s.guest(s.openSession("H1"))
	done := s.guest(s.openSession("H2"))
	for i := 0; i < 3; i++ {
		for _, g := range []*guest{open, done} {
			g.client = newClient()
			if r := g.order(i, newKey(), cart(line("tea", i+1))); r.Status != 200 {
				t.Fatalf("order: %d %s", r.Status, r.Body)
			}
		}
	}
	s.mustStaff(1, "POST", "/api/staff/sessions/"+done.sess.ID+"/checkout", nil)
	count := func(n *node.Node, q string) int {
		var v int
		if err := n.FSM().Query(func(db *sql.DB) error { return db.QueryRow(q).Scan(&v) }); err != nil {
			t.Fatal(err)
		}
		return v
	}
	li, leader := s.c.WaitLeader(5 * time.Second)
	audits := count(leader, `SELECT count(*) FROM audit`)
	if audits == 0 {
		t.Fatal("no audit rows to keep")
	}
	if err := s.svcs[li].Housekeep(context.Background()); err != nil {
		t.Fatalf("housekeep: %v", err)
	}
	// From a follower too: the command is proposed through the leader.
	if err := s.svcs[(li+1)%3].Housekeep(context.Background()); err != nil {
		t.Fatalf("housekeep through a follower: %v", err)
	}
	// The box 50 years behind steps away; one with a correct clock leads
	// and housekeeps: by its wall clock every row is 50 years old.
	s.c.StopNode(first)
	ni, _ := s.c.WaitLeader(10 * time.Second)
	if err := s.svcs[ni].Housekeep(context.Background()); err != nil {
		t.Fatalf("housekeep under the correct clock: %v", err)
	}
	s.c.StartNode(first)
	s.c.AssertIdentical(20 * time.Second)
	for i, n := range s.c.Nodes {
		if got := count(n, `SELECT count(*) FROM orders WHERE session_id = '`+done.sess.ID+`'`); got != 0 {
			t.Errorf("node %d: %d orders of the closed session still live", i, got)
		}
		if got := count(n, `SELECT count(*) FROM orders_archive WHERE session_id = '`+done.sess.ID+`'`); got != 3 {
			t.Errorf("node %d: %d orders archived, want 3", i, got)
		}
		if got := count(n, `SELECT count(*) FROM orders WHERE session_id = '`+open.sess.ID+`'`); got != 3 {
			t.Errorf("node %d: the open session has %d live orders, want 3", i, got)
		}
		if got := count(n, `SELECT count(*) FROM audit`); got < audits {
			t.Errorf("node %d: %d audit rows left of %d, all younger than the retention", i, got, audits)
		}
		if got := count(n, `SELECT count(*) FROM sessions WHERE session_id = '`+done.sess.ID+`'`); got != 1 {
			t.Errorf("node %d: the closed session was pruned", i)
		}
	}
	// The open session keeps working; its history is intact.
	if h := open.history(s.running(2), ""); len(h) != 3 {
		t.Fatalf("open session history: %+v", h)
	}
}
