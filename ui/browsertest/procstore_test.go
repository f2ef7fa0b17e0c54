package browsertest

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"masterorder/api/apitest"
	"masterorder/node/nodetest"
	"masterorder/orders/orderstest"
)

// procStore is three real `masterorder run` processes, configured by
// `masterorder init` (mutual TLS between them), on 127.0.0.2, .3 and .4
// with one HTTP port and one Raft port for all: a box can be frozen
// (SIGSTOP) or killed, which an in-process node cannot.
type procStore struct {
	t     *testing.T
	dir   string
	bin   string
	ids   []string
	ips   []string
	port  int // the HTTP port of every box
	mu    sync.Mutex
	procs map[string]*exec.Cmd
	hc    *http.Client
	token string
}

var (
	procBuildOnce sync.Once
	procBin       string
	procBuildErr  error
)

// masterorderBinary builds the binary once per test process.
func masterorderBinary(t *testing.T) string {
	t.Helper()
	procBuildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "masterorder-browsertest-")
		if err != nil {
			procBuildErr = err
			return
		}
		procBin = filepath.Join(dir, "masterorder")
		if out, err := exec.Command("go", "build", "-o", procBin, "masterorder").CombinedOutput(); err != nil {
			procBuildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if procBuildErr != nil {
		t.Fatal(procBuildErr)
	}
	return procBin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if procBin != "" {
		os.RemoveAll(filepath.Dir(procBin)) // the binary built for the process stores
	}
	os.Exit(code)
}

// startProcStore starts the three boxes with publicURL (may be empty) as
// public_url, logs in and puts gyoza (450) and tea (300) on the menu.
func startProcStore(t *testing.T, publicURL func(port int) string) *procStore {
	t.Helper()
	ps := &procStore{t: t, dir: t.TempDir(), bin: masterorderBinary(t), ids: []string{"a", "b", "c"},
		ips: []string{"127.0.0.2", "127.0.0.3", "127.0.0.4"}, procs: map[string]*exec.Cmd{},
		hc: apitest.Client(t, &http.Client{Timeout: 10 * time.Second})}
	ps.port = nodetest.FreePort(t)
	raft := nodetest.FreePort(t)
	var spec []string
	for i, id := range ps.ids {
		spec = append(spec, fmt.Sprintf("%s=%s:%d:%d", id, ps.ips[i], ps.port, raft))
	}
	out, err := exec.Command(ps.bin, "init", "--shop-id", "bt", "--nodes", strings.Join(spec, ","),
		"--out", ps.dir, "--staff-password", staffPassword, "--plain-http").CombinedOutput() // the pages are opened over http
	if err != nil {
		t.Fatalf("masterorder init: %v\n%s", err, out)
	}
	if publicURL != nil {
		for _, id := range ps.ids {
			path := filepath.Join(ps.dir, id+".toml")
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			// A top-level key: before the first table.
			b = append([]byte(fmt.Sprintf("public_url = %q\n", publicURL(ps.port))), b...)
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Cleanup(ps.killAll)
	for _, id := range ps.ids {
		ps.start(id)
	}
	ps.token = ps.login()
	for _, item := range []map[string]any{
		{"id": "gyoza", "name": "餃子", "nameEn": "Gyoza", "category": "sides", "price": 450, "available": true},
		{"id": "tea", "name": "烏龍茶", "nameEn": "Oolong tea", "category": "drinks", "price": 300, "available": true},
	} {
		id := item["id"].(string)
		delete(item, "id")
		if r := ps.staff(0, "PUT", "/api/staff/menu/"+id, item); r.status != 200 {
			t.Fatalf("put menu %s: %d %s", id, r.status, r.body)
		}
	}
	// A manager confirms the boxes' time, as one would in a store without
	// NTP (this machine may have none): the pages then show no clock
	// prompt, which is TestClockPrompt's business.
	if r := ps.staff(0, "POST", "/api/staff/clock", map[string]int64{"time": time.Now().UnixMilli()}); r.status != 200 {
		t.Fatalf("confirm the clock: %d %s", r.status, r.body)
	}
	return ps
}

func (ps *procStore) url(i int) string { return fmt.Sprintf("http://%s:%d", ps.ips[i], ps.port) }

func (ps *procStore) start(id string) {
	ps.t.Helper()
	logf, err := os.OpenFile(filepath.Join(ps.dir, id+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		ps.t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(ps.bin, "run", "--config", filepath.Join(ps.dir, id+".toml"))
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		ps.t.Fatalf("start %s: %v", id, err)
	}
	ps.mu.Lock()
	ps.procs[id] = cmd
	ps.mu.Unlock()
}

// signal sends sig to box i's process group.
func (ps *procStore) signal(i int, sig syscall.Signal) {
	ps.mu.Lock()
	cmd := ps.procs[ps.ids[i]]
	ps.mu.Unlock()
	if cmd != nil {
		syscall.Kill(-cmd.Process.Pid, sig)
	}
}

// kill SIGKILLs box i and reaps it.
func (ps *procStore) kill(i int) {
	ps.mu.Lock()
	cmd := ps.procs[ps.ids[i]]
	delete(ps.procs, ps.ids[i])
	ps.mu.Unlock()
	if cmd == nil {
		return
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGCONT) // a frozen box too
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	cmd.Wait()
}

func (ps *procStore) killAll() {
	for i := range ps.ids {
		ps.kill(i)
	}
	if ps.t.Failed() {
		for _, id := range ps.ids {
			if b, err := os.ReadFile(filepath.Join(ps.dir, id+".log")); err == nil {
				lines := strings.Split(strings.TrimSpace(string(b)), "\n")
				ps.t.Logf("last log lines of %s:\n%s", id, strings.Join(lines[max(0, len(lines)-15):], "\n"))
			}
		}
	}
}

func (ps *procStore) call(i int, method, path string, hdr map[string]string, body any) apiResp {
	ps.t.Helper()
	return toAPIResp(orderstest.Do(ps.t, ps.hc, method, ps.url(i)+path, hdr, body))
}

func (ps *procStore) staff(i int, method, path string, body any) apiResp {
	ps.t.Helper()
	return ps.call(i, method, path, map[string]string{"Authorization": "Bearer " + ps.token}, body)
}

// login waits for the cluster to take a login (a leader elected).
func (ps *procStore) login() string {
	ps.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := ps.call(0, "POST", "/api/staff/login", nil, map[string]string{"password": staffPassword})
		if r.status == 200 {
			var out struct{ Token string }
			r.decode(ps.t, &out)
			return out.Token
		}
		if time.Now().After(deadline) {
			ps.t.Fatalf("login: %d %s", r.status, r.body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (ps *procStore) openSession(i int, table string) session {
	ps.t.Helper()
	// Right after a box froze or died the others may still be electing a
	// leader (503 NO_QUORUM with Retry-After): try again, as the console
	// would, for a bounded time. A second open table is harmless here.
	deadline := time.Now().Add(30 * time.Second)
	r := ps.staff(i, "POST", "/api/staff/sessions", map[string]string{"tableId": table})
	for r.status == http.StatusServiceUnavailable && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		r = ps.staff(i, "POST", "/api/staff/sessions", map[string]string{"tableId": table})
	}
	if r.status != 200 {
		ps.t.Fatalf("open session %s on box %d: %d %s", table, i, r.status, r.body)
	}
	var out session
	r.decode(ps.t, &out)
	return out
}

// staffOrder places one gyoza for the session through box i, resending
// with the same Idempotency-Key while the cluster settles (a box just
// frozen, a new leader), and returns the order id.
func (ps *procStore) staffOrder(i int, sess session) int64 {
	ps.t.Helper()
	key := uuidV4()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := ps.call(i, "POST", "/api/staff/orders?sessionId="+sess.SessionID,
			map[string]string{"Authorization": "Bearer " + ps.token, "Idempotency-Key": key},
			map[string]any{"items": []map[string]any{{"menuId": "gyoza", "quantity": 1, "toppings": []string{}}}})
		if r.status == 200 {
			var out struct {
				OrderID int64 `json:"orderId"`
			}
			r.decode(ps.t, &out)
			return out.OrderID
		}
		if time.Now().After(deadline) {
			ps.t.Fatalf("staff order through box %d: %d %s", i, r.status, r.body)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
