//go:build netns

package browsertest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"masterorder/node/lanname"
	"masterorder/orders/orderstest"
)

// netBox is one `masterorder` process in its own namespace on the lan.
type netBox struct {
	id  string
	ns  string
	ip  string
	dir string
	cmd *exec.Cmd
}

func (b *netBox) url() string { return "http://" + b.ip }

// netStore is the boxes of a store on a lan, started as the package's
// unit starts them (`masterorder run`), reached over the host's leg.
type netStore struct {
	t     *testing.T
	lan   *lan
	bin   string
	mu    sync.Mutex
	boxes []*netBox
	hc    *http.Client
	token string
}

func newNetStore(t *testing.T, l *lan) *netStore {
	s := &netStore{t: t, lan: l, bin: masterorderBinary(t), hc: &http.Client{Timeout: 10 * time.Second}}
	t.Cleanup(s.killAll)
	return s
}

// add makes a namespace for box id at lanNet+host (nothing started).
func (s *netStore) add(id string, host int) *netBox {
	b := &netBox{id: id, ns: s.lan.join(id, host), ip: fmt.Sprintf("%s%d", lanNet, host), dir: filepath.Join(s.t.TempDir(), id)}
	if err := os.MkdirAll(b.dir, 0o700); err != nil {
		s.t.Fatal(err)
	}
	s.mu.Lock()
	s.boxes = append(s.boxes, b)
	s.mu.Unlock()
	return b
}

// start runs `masterorder args…` in the box's namespace, logging to
// <dir>/box.log.
func (s *netStore) start(b *netBox, args ...string) {
	s.t.Helper()
	logf, err := os.OpenFile(filepath.Join(b.dir, "box.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		s.t.Fatal(err)
	}
	defer logf.Close()
	// `ip netns exec` enters the namespace and execs the binary: the pid
	// is the box's.
	cmd := s.lan.command(b.ns, s.bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("start %s: %v", b.id, err)
	}
	s.mu.Lock()
	b.cmd = cmd
	s.mu.Unlock()
}

// kill SIGKILLs box b and reaps it.
func (s *netStore) kill(b *netBox) {
	s.mu.Lock()
	cmd := b.cmd
	b.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	cmd.Wait()
}

func (s *netStore) killAll() {
	s.mu.Lock()
	boxes := append([]*netBox(nil), s.boxes...)
	s.mu.Unlock()
	for _, b := range boxes {
		s.kill(b)
	}
	if s.t.Failed() {
		for _, b := range boxes {
			if out, err := os.ReadFile(filepath.Join(b.dir, "box.log")); err == nil {
				lines := strings.Split(strings.TrimSpace(string(out)), "\n")
				s.t.Logf("last log lines of box %s:\n%s", b.id, strings.Join(lines[max(0, len(lines)-20):], "\n"))
			}
		}
	}
}

func (s *netStore) call(b *netBox, method, path string, hdr map[string]string, body any) apiResp {
	s.t.Helper()
	return toAPIResp(orderstest.Do(s.t, s.hc, method, b.url()+path, hdr, body))
}

func (s *netStore) staff(b *netBox, method, path string, body any) apiResp {
	s.t.Helper()
	return s.call(b, method, path, map[string]string{"Authorization": "Bearer " + s.token}, body)
}

// login waits for the cluster to take a login through b.
func (s *netStore) login(b *netBox, password string) {
	s.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		r := s.call(b, "POST", "/api/staff/login", nil, map[string]string{"password": password})
		if r.status == 200 {
			var out struct{ Token string }
			r.decode(s.t, &out)
			s.token = out.Token
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("login through %s: %d %s", b.id, r.status, r.body)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// retryStaff repeats a staff write through b while the cluster settles
// (503 NO_QUORUM after a box died), for a bounded time.
func (s *netStore) retryStaff(b *netBox, method, path string, body any) apiResp {
	s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := s.staff(b, method, path, body)
		if (r.status != 503 && r.status != -1) || time.Now().After(deadline) {
			return r
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// orderIDs is the ids of every order box b holds for a session (read from
// its own replica).
func (s *netStore) orderIDs(b *netBox, sess session) map[int64]bool {
	s.t.Helper()
	r := s.call(b, "GET", "/api/guest/sessions/"+sess.SessionID+"/orders", map[string]string{"X-Session-PIN": sess.PIN, "X-MasterOrder-Client-Id": newClientID()}, nil)
	if r.status != 200 {
		return nil
	}
	var out struct{ Orders []order }
	r.decode(s.t, &out)
	ids := map[int64]bool{}
	for _, o := range out.Orders {
		ids[o.OrderID] = true
	}
	return ids
}

// waitEveryBoxHolds waits until every running box's replica holds every
// order in want.
func (s *netStore) waitEveryBoxHolds(boxes []*netBox, sess session, want []int64, within time.Duration) {
	s.t.Helper()
	deadline := time.Now().Add(within)
	for _, b := range boxes {
		for {
			got := s.orderIDs(b, sess)
			missing := 0
			for _, id := range want {
				if !got[id] {
					missing++
				}
			}
			if missing == 0 {
				break
			}
			if time.Now().After(deadline) {
				s.t.Fatalf("box %s holds %d of the %d orders after %s", b.id, len(want)-missing, len(want), within)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

// mdnsResolver resolves names by mDNS from inside namespace ns, caching
// each answer for its TTL when cache is set (a phone's system resolver);
// lastIP tells which box answered last.
type mdnsResolver struct {
	ns    string
	cache bool
	mu    sync.Mutex
	ip    net.IP
	until time.Time
}

func (r *mdnsResolver) resolve(ctx context.Context, host string) (net.IP, error) {
	r.mu.Lock()
	if r.cache && r.ip != nil && time.Now().Before(r.until) {
		ip := r.ip
		r.mu.Unlock()
		return ip, nil
	}
	r.mu.Unlock()
	var ips []net.IP
	var rerr error
	if err := inNS(r.ns, func() {
		c, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		ips, rerr = lanname.Resolve(c, host)
	}); err != nil {
		return nil, err
	}
	if rerr != nil {
		return nil, rerr
	}
	r.mu.Lock()
	r.ip, r.until = ips[0], time.Now().Add(lanname.TTL*time.Second)
	r.mu.Unlock()
	return ips[0], nil
}

func (r *mdnsResolver) lastIP() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ip.String()
}

// phoneGuestOrder places one gyoza as a guest through the phone at base
// (http://masterorder.local), resending the same Idempotency-Key as
// order-sdk.js does until it succeeds or within runs out; it returns the
// order id and when it succeeded.
func phoneGuestOrder(t *testing.T, p *phone, base string, sess session, within time.Duration) (int64, error) {
	t.Helper()
	hdr := map[string]string{"Idempotency-Key": uuidV4(), "X-MasterOrder-Client-Id": newClientID(), "X-Session-PIN": sess.PIN}
	body := map[string]any{"items": []map[string]any{{"menuId": "gyoza", "quantity": 1, "toppings": []string{}}}}
	deadline := time.Now().Add(within)
	var last apiResp
	for time.Now().Before(deadline) {
		last = toAPIResp(orderstest.Do(t, p.hc, "POST", base+"/api/guest/sessions/"+sess.SessionID+"/orders", hdr, body))
		if last.status == 200 {
			var out struct{ OrderID int64 }
			last.decode(t, &out)
			return out.OrderID, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return 0, fmt.Errorf("guest order through %s: %d %s", base, last.status, last.body)
}

// phoneLoads tells whether the guest page loads through the phone.
func phoneLoads(t *testing.T, p *phone, url string) bool {
	r := orderstest.Do(t, p.hc, "GET", url, nil, nil)
	return r.Status == 200 && strings.Contains(string(r.Body), "<html")
}
