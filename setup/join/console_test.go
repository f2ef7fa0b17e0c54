package join

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"masterorder/httpapi"
	"masterorder/node/nodetest"
	"masterorder/orders"
	"masterorder/setup"
)

// The console joins only a box it listed (and so pinned by the
// fingerprint it announced): an id nobody listed, such as a rogue box's
// that announced itself after the list, is refused before any claim.
func TestConsoleJoinsOnlyListedBoxes(t *testing.T) {
	k := NewConsole(nil, orders.FileConfig{}, t.TempDir(), slog.New(slog.DiscardHandler))
	e := echo.New()
	k.Routes(e.Group("/api/staff"))
	req := httptest.NewRequest(http.MethodPost, "/api/staff/cluster/setup-boxes/rogue-box/join", strings.NewReader(`{}`))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, req)
	if rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), "BOX_NOT_FOUND") {
		t.Fatalf("join of an unlisted box: %d %s", rec.Code, rec.Body)
	}
	if p := k.Progress(); p.State != "idle" {
		t.Fatalf("progress after a refused join: %+v", p)
	}
}

// A member without the CA key (a store made by hand with init, the key
// not copied) refuses the join at once with NO_CA_KEY, in words, before
// any claim: not "unreachable" after trying.
func TestConsoleJoinNeedsTheCAKey(t *testing.T) {
	k := NewConsole(nil, orders.FileConfig{}, t.TempDir(), slog.New(slog.DiscardHandler))
	k.found["box-1"] = setup.Candidate{Found: setup.Found{ID: "box-1", Addr: "127.0.0.1:1", Fingerprint: "00"}}
	e := echo.New()
	k.Routes(e.Group("/api/staff"))
	req := httptest.NewRequest(http.MethodPost, "/api/staff/cluster/setup-boxes/box-1/join", strings.NewReader(`{}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept-Language", "en")
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, req)
	if rec.Code != http.StatusConflict || !strings.Contains(rec.Body.String(), `"reasonCode":"NO_CA_KEY"`) || !strings.Contains(rec.Body.String(), "ca-key.pem") {
		t.Fatalf("join without the CA key: %d %s", rec.Code, rec.Body)
	}
	if p := k.Progress(); p.State != "idle" {
		t.Fatalf("progress after a refused join: %+v", p)
	}
}

// A failed join's progress carries its reason in words, in the language
// the console asked for, beside the code.
func TestConsoleJoinProgressInWords(t *testing.T) {
	k := NewConsole(nil, orders.FileConfig{}, t.TempDir(), nil)
	k.progress = Progress{Job: setup.Job{State: setup.JobFailed, Reason: setup.Reason{Error: "SETUP_CODE_WRONG", Detail: "box refused (403 SETUP_CODE_WRONG): wrong setup code"}}}
	e := echo.New()
	k.Routes(e.Group("/api/staff"))
	for _, lang := range []string{"ja", "en"} {
		req := httptest.NewRequest(http.MethodGet, "/api/staff/cluster/join", nil)
		req.Header.Set("Accept-Language", lang)
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		var p Progress
		if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || p.Message != httpapi.Message("SETUP_CODE_WRONG", lang == "en") || p.Error != "SETUP_CODE_WRONG" {
			t.Errorf("%s: %d %s", lang, rec.Code, rec.Body)
		}
	}
}

// Two taps on "Add this box" at once start one join: the other taps are
// refused SETUP_BUSY, whatever the order in which they reach the member.
func TestConsoleStartsOneJoinAtATime(t *testing.T) {
	cl := nodetest.Start(t, 1, nil, nil, nil)
	dir := filepath.Dir(cl.Configs[0].TLS.CAFile) // the CA with its key, as the wizard leaves it
	// The box to join answers the join's first call only when the round
	// lets it: the join stays working while the taps race.
	var gate atomic.Pointer[chan struct{}]
	box := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-*gate.Load()
		http.Error(w, "gone", http.StatusServiceUnavailable)
	}))
	defer box.Close()
	k := NewConsole(cl.Nodes[0], orders.FileConfig{}, dir, nil)
	k.found["box-1"] = setup.Candidate{Found: setup.Found{ID: "box-1", Addr: box.Listener.Addr().String(), Fingerprint: setup.Fingerprint(box.Certificate().Raw)}}
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
		for k.Progress().State == setup.JobWorking {
			time.Sleep(10 * time.Millisecond)
		}
		if p := k.Progress(); p.State != setup.JobFailed {
			t.Errorf("round %d: the join after the box answered 503: %+v", round, p)
		}
	}
}
