//go:build faults

package node_test

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Store-floor "Reads without a quorum", on real processes: two of three
// boxes SIGKILLed, the survivor still answers every read the floor needs
// from its replica, flagged stale, and refuses writes; once the two are
// back the reads are fresh again and a kitchen stream opened on the lone
// box goes on live with what is committed from then on, exactly once.
func TestProcessTwoDeadSurvivorServesStale(t *testing.T) {
	pc := startProcCluster(t)
	survivor := pc.leader(30 * time.Second) // the harder case: a leader left alone
	token := pc.login(survivor)
	pc.putMenu(survivor, token, "ramen", 900, 10*time.Second)
	pc.mustDo(survivor, "PUT", "/api/staff/stock/ramen", token, nil, map[string]any{"quantity": 100})
	var sessions []procSession
	for k := 0; k < 4; k++ {
		sessions = append(sessions, pc.openSession(survivor, token, "T"+strconv.Itoa(k+1)))
	}
	first := pc.guestOrder(survivor, sessions[0])

	var dead []string
	for _, id := range pc.ids {
		if id != survivor {
			dead = append(dead, id)
		}
	}
	for _, id := range dead {
		pc.kill(id)
	}
	killed := time.Now()

	guestHdr := map[string]string{"X-Session-PIN": sessions[0].PIN}
	guestPath := "/api/guest/sessions/" + sessions[0].ID
	mark := strconv.FormatInt(first, 10)
	reads := []struct {
		path, token string
		hdr         map[string]string
		want        string // in the body
	}{
		{"/api/kitchen/orders", token, nil, mark},
		{guestPath, "", guestHdr, sessions[0].ID},
		{guestPath + "/menu", "", guestHdr, `"ramen"`},
		{guestPath + "/orders", "", guestHdr, mark},
		{"/api/staff/menu", token, nil, `"ramen"`},
		{"/api/staff/stock", token, nil, `"ramen"`},
		{"/api/staff/sessions", token, nil, sessions[3].ID},
		{"/api/cluster/status", "", nil, `"stale":true`},
	}
	for _, r := range reads {
		for {
			code, h, b, err := pc.req(survivor, "GET", r.path, r.token, r.hdr, nil)
			if err == nil && code == http.StatusOK && h.Get("X-MasterOrder-Stale") == "true" && bytes.Contains(b, []byte(r.want)) {
				break
			}
			if time.Since(killed) > 10*time.Second {
				t.Fatalf("GET %s on the survivor %v after the kills: %d stale=%q %s %v", r.path, time.Since(killed).Round(time.Millisecond), code, h.Get("X-MasterOrder-Stale"), b, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	t.Logf("every read answered stale with its data %v after the kills", time.Since(killed).Round(time.Millisecond))

	// The kitchen stream opens on the lone box with its snapshot; this
	// connection is kept across the recovery.
	lone := pc.openStream(survivor, token)
	if lone.header.Get("X-MasterOrder-Stale") != "true" {
		t.Fatalf("stream on the lone box: stale header %q", lone.header.Get("X-MasterOrder-Stale"))
	}
	snap := lone.next(t, 10*time.Second)
	if snap.typ != "snapshot" || !strings.Contains(snap.data, `"orderId":`+mark) {
		t.Fatalf("first event on the lone box: %+v", snap)
	}

	// Writes: 503 NO_QUORUM with Retry-After, never a success.
	code, h, b, _ := pc.req(survivor, "PUT", "/api/staff/menu/gyoza", token, nil,
		map[string]any{"name": "餃子", "category": "sides", "price": 450, "available": true})
	if code != http.StatusServiceUnavailable || !bytes.Contains(b, []byte("NO_QUORUM")) || h.Get("Retry-After") == "" {
		t.Fatalf("write without a quorum: %d %s Retry-After=%q", code, b, h.Get("Retry-After"))
	}

	for _, id := range dead {
		pc.start(id)
	}
	deadline := time.Now().Add(60 * time.Second)
	for _, r := range reads {
		want := r.want
		if r.path == "/api/cluster/status" {
			want = `"stale":false`
		}
		for {
			code, h, b, err := pc.req(survivor, "GET", r.path, r.token, r.hdr, nil)
			if err == nil && code == http.StatusOK && h.Get("X-MasterOrder-Stale") != "true" && bytes.Contains(b, []byte(want)) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("GET %s after the two came back: %d stale=%q %s %v", r.path, code, h.Get("X-MasterOrder-Stale"), b, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	// Orders committed now reach the stream opened while alone, once each.
	want := map[int64]bool{}
	for _, s := range sessions[1:] {
		want[pc.guestOrder(survivor, s)] = true
	}
	seen := map[int64]int{}
	last := snap.id
	for got := 0; got < len(want); {
		e := lone.next(t, 30*time.Second)
		if e.typ == "ping" {
			continue
		}
		if e.id <= last {
			t.Fatalf("event id %d after %d on one connection", e.id, last)
		}
		last = e.id
		if e.typ != "order.created" {
			continue
		}
		var d struct {
			Order struct {
				OrderID int64 `json:"orderId"`
			} `json:"order"`
		}
		if err := json.Unmarshal([]byte(e.data), &d); err != nil {
			t.Fatalf("event data %q: %v", e.data, err)
		}
		if seen[d.Order.OrderID]++; seen[d.Order.OrderID] > 1 {
			t.Fatalf("order %d delivered twice", d.Order.OrderID)
		}
		if want[d.Order.OrderID] {
			got++
		}
	}
	for id := range want {
		if seen[id] != 1 {
			t.Fatalf("order %d delivered %d times on the stream opened while alone (seen %v)", id, seen[id], seen)
		}
	}
}

type procSession struct{ ID, PIN string }

// req is one HTTP call to node id with extra headers, answering the
// headers too.
func (pc *procCluster) req(id, method, path, token string, hdr map[string]string, body any) (int, http.Header, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	r, err := http.NewRequest(method, "http://"+pc.http[id]+path, rd)
	if err != nil {
		return 0, nil, nil, err
	}
	r.Header.Set("Content-Type", "application/json")
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	resp, err := pc.cli.Do(r)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b, nil
}

func (pc *procCluster) mustDo(id, method, path, token string, hdr map[string]string, body any) []byte {
	pc.t.Helper()
	code, _, b, err := pc.req(id, method, path, token, hdr, body)
	if err != nil || code != http.StatusOK {
		pc.t.Fatalf("%s %s on %s: %d %s %v", method, path, id, code, b, err)
	}
	return b
}

func (pc *procCluster) openSession(id, token, table string) procSession {
	pc.t.Helper()
	var out struct {
		SessionID string `json:"sessionId"`
		PIN       string `json:"pin"`
	}
	json.Unmarshal(pc.mustDo(id, "POST", "/api/staff/sessions", token, nil, map[string]string{"tableId": table}), &out)
	return procSession{ID: out.SessionID, PIN: out.PIN}
}

// guestOrder places one ramen for the session through node id, resending
// with the same Idempotency-Key while the cluster settles, and returns the
// order id.
func (pc *procCluster) guestOrder(id string, s procSession) int64 {
	pc.t.Helper()
	b := make([]byte, 16)
	rand.Read(b)
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	key := fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
	hdr := map[string]string{"Idempotency-Key": key, "X-Session-PIN": s.PIN, "X-MasterOrder-Client-Id": "guest-" + s.ID[:8]}
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, _, body, err := pc.req(id, "POST", "/api/guest/sessions/"+s.ID+"/orders", "", hdr,
			map[string]any{"items": []map[string]any{{"menuId": "ramen", "quantity": 1, "toppings": []string{}}}})
		if err == nil && code == http.StatusOK {
			var out struct {
				OrderID int64 `json:"orderId"`
			}
			json.Unmarshal(body, &out)
			return out.OrderID
		}
		if time.Now().After(deadline) {
			pc.t.Fatalf("guest order through %s: %d %s %v", id, code, body, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

type sseEvent struct {
	id        uint64
	typ, data string
}

type sseConn struct {
	header http.Header
	events chan sseEvent
}

// openStream connects to node id's kitchen stream; the connection closes
// when the test ends.
func (pc *procCluster) openStream(id, token string) *sseConn {
	pc.t.Helper()
	req, err := http.NewRequest("GET", "http://"+pc.http[id]+"/api/kitchen/stream", nil)
	if err != nil {
		pc.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := (&http.Client{}).Do(req)
	if err != nil {
		pc.t.Fatalf("kitchen stream on %s: %v", id, err)
	}
	pc.t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		pc.t.Fatalf("kitchen stream on %s: %d %s", id, resp.StatusCode, b)
	}
	c := &sseConn{header: resp.Header, events: make(chan sseEvent, 1024)}
	go func() {
		defer close(c.events)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var e sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if e.typ != "" {
					c.events <- e
				}
				e = sseEvent{}
			case strings.HasPrefix(line, "id: "):
				e.id, _ = strconv.ParseUint(line[4:], 10, 64)
			case strings.HasPrefix(line, "event: "):
				e.typ = line[7:]
			case strings.HasPrefix(line, "data:"):
				e.data = strings.TrimPrefix(line[5:], " ")
			}
		}
	}()
	return c
}

func (c *sseConn) next(t *testing.T, timeout time.Duration) sseEvent {
	t.Helper()
	select {
	case e, ok := <-c.events:
		if !ok {
			t.Fatal("kitchen stream closed")
		}
		return e
	case <-time.After(timeout):
		t.Fatalf("no kitchen event within %v", timeout)
	}
	return sseEvent{}
}
