package orders_test

import (
	"bufio"
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"masterorder/api/apitest"
)

type callView struct {
	CallID    int64  `json:"callId"`
	SessionID string `json:"sessionId"`
	TableID   string `json:"tableId"`
	Kind      string `json:"kind"`
	Status    string `json:"status"`
	CreatedAt string `json:"createdAt"`
}

func (g *guest) call(node int, kind string) resp {
	g.s.t.Helper()
	return g.s.do(node, "POST", "/api/guest/sessions/"+g.sess.ID+"/calls", map[string]string{"X-Session-PIN": g.sess.PIN},
		map[string]string{"kind": kind})
}

func (s *store) openCalls(node int) []callView {
	s.t.Helper()
	var out struct{ Calls []callView }
	s.mustStaff(node, "GET", "/api/staff/calls?status=OPEN", nil).json(s.t, &out)
	return out.Calls
}

// TestGuestCallDecisions: a repeat answers the open call, a new call
// within 30 s is CALL_TOO_SOON, done works once and answers 404 for an
// unknown call, checkout closes the open calls and later calls are 410;
// every node lists the same calls.
func TestGuestCallDecisions(t *testing.T) {
	s := startStore(t, 3, nil)
	s.seedMenu()
	sess := s.openSession("T5")
	g := s.guest(sess)

	first := g.call(0, "bill")
	if first.Status != 200 {
		t.Fatalf("call: %d %s", first.Status, first.Body)
	}
	var c1 callView
	first.json(t, &c1)
	if c1.CallID == 0 || c1.Kind != "bill" || c1.Status != "OPEN" || c1.TableID != "T5" {
		t.Fatalf("call answer: %s", first.Body)
	}
	// A double tap on another node answers the same open call.
	var again callView
	if r := g.call(2, "bill"); r.Status != 200 {
		t.Fatalf("repeat: %d %s", r.Status, r.Body)
	} else {
		r.json(t, &again)
	}
	if again.CallID != c1.CallID {
		t.Fatalf("repeat made a new call: %d vs %d", again.CallID, c1.CallID)
	}
	// Another kind within 30 s of the first: refused, with Retry-After.
	r := g.call(1, "water")
	if r.Status != 429 || r.reason(t) != "CALL_TOO_SOON" || r.Header.Get("Retry-After") == "" {
		t.Fatalf("second kind: %d %v %s", r.Status, r.Header, r.Body)
	}
	// Bad input.
	for _, body := range []string{`{"kind":"sake"}`, `{}`, `not json`, `{"kind":"bill","x":1}`} {
		r := s.do(0, "POST", "/api/guest/sessions/"+sess.ID+"/calls", map[string]string{"X-Session-PIN": sess.PIN}, body)
		if r.Status != 400 || r.reason(t) != "INVALID_REQUEST" {
			t.Fatalf("body %s: %d %s", body, r.Status, r.Body)
		}
	}
	if r := s.do(0, "POST", "/api/guest/sessions/"+sess.ID+"/calls", map[string]string{"X-Session-PIN": wrongPIN(sess.PIN)},
		map[string]string{"kind": "bill"}); r.Status != 401 {
		t.Fatalf("wrong PIN: %d %s", r.Status, r.Body)
	}
	// Every node lists the one open call.
	for i := 0; i < 3; i++ {
		calls := s.openCalls(i)
		if len(calls) != 1 || calls[0].CallID != c1.CallID || calls[0].SessionID != sess.ID || calls[0].CreatedAt == "" {
			t.Fatalf("node %d open calls: %+v", i, calls)
		}
	}
	if r := s.staff(1, "POST", "/api/staff/calls/999999/done", nil); r.Status != 404 || r.reason(t) != "CALL_NOT_FOUND" {
		t.Fatalf("unknown call done: %d %s", r.Status, r.Body)
	}
	if r := s.staff(1, "POST", "/api/staff/calls/abc/done", nil); r.Status != 404 || r.reason(t) != "CALL_NOT_FOUND" {
		t.Fatalf("bad call id done: %d %s", r.Status, r.Body)
	}
	var done callView
	s.mustStaff(1, "POST", "/api/staff/calls/"+strconv.FormatInt(c1.CallID, 10)+"/done", nil).json(t, &done)
	if done.Status != "DONE" {
		t.Fatalf("done: %+v", done)
	}
	s.mustStaff(2, "POST", "/api/staff/calls/"+strconv.FormatInt(c1.CallID, 10)+"/done", nil) // twice: same answer
	for i := 0; i < 3; i++ {
		if calls := s.openCalls(i); len(calls) != 0 {
			t.Fatalf("node %d still lists %+v", i, calls)
		}
	}
	// The bill call is done, so "bill" again is a new call: still within
	// the session's 30 s.
	if r := g.call(0, "bill"); r.Status != 429 || r.reason(t) != "CALL_TOO_SOON" {
		t.Fatalf("new call within 30 s: %d %s", r.Status, r.Body)
	}
	if r := s.staff(0, "GET", "/api/staff/calls?status=NOPE", nil); r.Status != 400 {
		t.Fatalf("bad status: %d", r.Status)
	}

	// Checkout closes a session's open calls.
	other := s.openSession("T6")
	g2 := s.guest(other)
	if r := g2.call(1, "staff"); r.Status != 200 {
		t.Fatalf("T6 call: %d %s", r.Status, r.Body)
	}
	s.mustStaff(0, "POST", "/api/staff/sessions/"+other.ID+"/checkout", map[string]string{"payment": "cash"})
	for i := 0; i < 3; i++ {
		if calls := s.openCalls(i); len(calls) != 0 {
			t.Fatalf("node %d open calls after checkout: %+v", i, calls)
		}
	}
	if r := g2.call(2, "water"); r.Status != 410 || r.reason(t) != "SESSION_CLOSED" {
		t.Fatalf("call after checkout: %d %s", r.Status, r.Body)
	}
	if r := s.do(0, "POST", "/api/guest/sessions/nosuchsession0000000/calls", map[string]string{"X-Session-PIN": "0000"},
		map[string]string{"kind": "bill"}); r.Status != 404 {
		t.Fatalf("unknown session: %d %s", r.Status, r.Body)
	}
}

// TestGuestCallStreamEvents: kitchen screens on every node see
// call.created and call.done, with the same Raft-index ids.
func TestGuestCallStreamEvents(t *testing.T) {
	s := startStore(t, 3, nil)
	s.seedMenu()
	sess := s.openSession("T7")
	g := s.guest(sess)
	var c callView
	if r := g.call(0, "water"); r.Status != 200 {
		t.Fatalf("call: %d %s", r.Status, r.Body)
	} else {
		r.json(t, &c)
	}
	s.mustStaff(1, "POST", "/api/staff/calls/"+strconv.FormatInt(c.CallID, 10)+"/done", nil)

	ids := make([]string, 3)
	for i := 0; i < 3; i++ {
		events := readEvents(t, s.url(i)+"/api/kitchen/stream?lastEventId=0&token="+s.token, "call.created", "call.done")
		if !strings.Contains(events["call.created"].data, `"kind":"water"`) || !strings.Contains(events["call.created"].data, sess.ID) ||
			!strings.Contains(events["call.done"].data, `"status":"DONE"`) {
			t.Fatalf("node %d events: %+v", i, events)
		}
		ids[i] = events["call.created"].id + "/" + events["call.done"].id
	}
	if ids[0] != ids[1] || ids[1] != ids[2] {
		t.Fatalf("event ids differ across nodes: %v", ids)
	}
}

type sseEvent struct{ id, data string }

// readEvents reads a stream until every wanted event type arrived (a
// generous bound: the machine may be loaded).
func readEvents(t *testing.T, url string, want ...string) map[string]sseEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	res, err := apitest.Client(t, nil).Do(req)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("stream: %v %v", err, res)
	}
	defer res.Body.Close()
	got := map[string]sseEvent{}
	var typ, id, data string
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event:"):
			typ = strings.TrimSpace(line[6:])
		case strings.HasPrefix(line, "id:"):
			id = strings.TrimSpace(line[3:])
		case strings.HasPrefix(line, "data:"):
			data += strings.TrimSpace(line[5:])
		case line == "":
			if _, seen := got[typ]; !seen && typ != "" {
				got[typ] = sseEvent{id: id, data: data}
			}
			typ, id, data = "", "", ""
			all := true
			for _, w := range want {
				if _, ok := got[w]; !ok {
					all = false
				}
			}
			if all {
				return got
			}
		}
	}
	t.Fatalf("stream ended before %v: got %+v (%v)", want, got, sc.Err())
	return nil
}
