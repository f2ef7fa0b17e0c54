package setup

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"masterorder/setup/cluster"
)

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
	w.progress = Progress{Job: Job{State: JobWorking}, Boxes: []BoxProgress{{ID: "box-1", Step: StepClaimed}}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	followed := make(chan struct{})
	go func() {
		defer close(followed)
		w.follow(ctx, CreateRequest{ShopName: "Test", GuestName: "test.local"}, []cluster.Peer{{ID: "a", HTTPAddr: addr, HTTPSAddr: addr}}, []bool{true})
	}()
	for asked := 0; ; {
		select {
		case <-followed:
			if p := w.Progress(); p.State != JobDone || p.Boxes[0].Step != StepReady {
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
