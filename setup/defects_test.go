package setup

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"masterorder/node"
	"masterorder/node/nodetest"
	"masterorder/node/pki"
	"masterorder/orders"
)

// Two taps on "Add this box" at once start one join: the other taps are
// refused SETUP_BUSY, whatever the order in which they reach the member.
func TestConsoleStartsOneJoinAtATime(t *testing.T) {
	cl := nodetest.Start(t, 1, nil, nil, nil)
	dir := t.TempDir()
	ca, err := pki.NewCA("MasterOrder test", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := ca.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	// The box to join answers the join's first call only when the round
	// lets it: the join stays working while the taps race.
	var gate atomic.Pointer[chan struct{}]
	box := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-*gate.Load()
		http.Error(w, "gone", http.StatusServiceUnavailable)
	}))
	defer box.Close()
	k := NewConsole(cl.Nodes[0], orders.FileConfig{}, dir, nil)
	k.found["box-1"] = Candidate{Found: Found{ID: "box-1", Addr: box.Listener.Addr().String(), Fingerprint: Fingerprint(box.Certificate().Raw)}}
	e := echo.New()
	k.Routes(e.Group("/api/staff"))
	tap := func() string {
		req := httptest.NewRequest(http.MethodPost, "/api/staff/cluster/setup-boxes/box-1/join", strings.NewReader(`{}`))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		return fmt.Sprintf("%d %s", rec.Code, rec.Body)
	}
	const rounds, taps = 10, 16
	for round := range rounds {
		release := make(chan struct{})
		gate.Store(&release)
		var ready, done sync.WaitGroup
		ready.Add(1)
		answers := make(chan string, taps)
		for range taps {
			done.Add(1)
			go func() {
				defer done.Done()
				ready.Wait()
				answers <- tap()
			}()
		}
		ready.Done()
		done.Wait()
		close(answers)
		started := 0
		for a := range answers {
			switch {
			case strings.HasPrefix(a, "202 "):
				started++
			case !strings.HasPrefix(a, "409 ") || !strings.Contains(a, "SETUP_BUSY"):
				t.Errorf("round %d: a tap while a join runs: %s", round, a)
			}
		}
		if started != 1 {
			t.Errorf("round %d: %d joins started from %d taps at once, want 1", round, started, taps)
		}
		close(release)
		for k.Progress().State == "working" {
			time.Sleep(10 * time.Millisecond)
		}
		if p := k.Progress(); p.State != "failed" {
			t.Errorf("round %d: the join after the box answered 503: %+v", round, p)
		}
	}
}

// The wizard follows a box to "joined" however its status answer
// arrives: here in two pieces, the list of nodes in the second.
func TestWizardReadsTheWholeStatus(t *testing.T) {
	statusAsked := make(chan struct{}, 100)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/cluster/status" {
			return // /healthz, /readyz: 200
		}
		statusAsked <- struct{}{}
		body := `{"leader":"a","nodes":[{"id":"a","httpAddr":"x"}]}`
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(body[:12]))
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done(): // the client stopped at the first piece
		case <-time.After(100 * time.Millisecond):
			w.Write([]byte(body[12:]))
		}
	}))
	defer srv.Close()
	addr := srv.Listener.Addr().String()
	w := newWizard(&Box{})
	w.progress = Progress{State: "working", Boxes: []BoxProgress{{ID: "box-1", Step: StepClaimed}}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	followed := make(chan struct{})
	go func() {
		defer close(followed)
		w.follow(ctx, CreateRequest{ShopName: "Test", GuestName: "test.local"}, []node.Peer{{ID: "a", HTTPAddr: addr, HTTPSAddr: addr}}, []bool{true})
	}()
	for asked := 0; ; {
		select {
		case <-followed:
			if p := w.Progress(); p.State != "done" || p.Boxes[0].Step != StepReady {
				t.Fatalf("after following: %+v", p)
			}
			return
		case <-statusAsked:
			if asked++; asked == 3 {
				cancel()
				<-followed
				t.Fatalf("the box stays at %q after three status answers that list it", w.Progress().Boxes[0].Step)
			}
		}
	}
}

// A refusal wrapped on its way up keeps its reason code: not UNREACHABLE.
func TestReasonOfAWrappedRefusal(t *testing.T) {
	err := fmt.Errorf("claim box 1: %w", &RefusedError{Status: 403, Code: "CLAIM_WINDOW_CLOSED", Message: "closed"})
	if code, detail := reasonOf(err); code != "CLAIM_WINDOW_CLOSED" || detail != "closed" {
		t.Errorf("reasonOf(wrapped refusal) = %s, %q", code, detail)
	}
	if code, _ := reasonOf(fmt.Errorf("push: %w", ErrFingerprint)); code != "FINGERPRINT_MISMATCH" {
		t.Errorf("reasonOf(wrapped ErrFingerprint) = %s", code)
	}
	if code, _ := reasonOf(context.DeadlineExceeded); code != "UNREACHABLE" {
		t.Errorf("reasonOf(timeout) = %s", code)
	}
}
