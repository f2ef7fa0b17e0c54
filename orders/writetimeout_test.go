package orders_test

import (
	"bufio"
	"net/http"
	"strings"
	"testing"
	"time"

	"masterorder/node"
)

// The kitchen stream extends the write timeout per write: an order placed
// well after the timeout since the stream opened still reaches the screen.
func TestKitchenStreamOutlastsWriteTimeout(t *testing.T) {
	const timeout = 6 * time.Second // a login (bcrypt, race detector, loaded box) must fit
	s := startStore(t, 3, nil, func(o *node.Options) { o.WriteTimeout = timeout })
	s.seedMenu()
	g := s.guest(s.openSession("W1"))

	req, _ := http.NewRequest("GET", s.url(0)+"/api/kitchen/stream", nil)
	req.Header.Set("Authorization", "Bearer "+s.token)
	res, err := (&http.Client{}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("stream: %d", res.StatusCode)
	}
	events := make(chan string, 64)
	go func() {
		defer close(events)
		br := bufio.NewReader(res.Body)
		for {
			l, err := br.ReadString('\n')
			if err != nil {
				return
			}
			if strings.HasPrefix(l, "event:") {
				events <- strings.TrimSpace(strings.TrimPrefix(l, "event:"))
			}
		}
	}()
	waitEvent := func(want func(string) bool, within time.Duration) bool {
		deadline := time.After(within)
		for {
			select {
			case e, ok := <-events:
				if !ok {
					return false
				}
				if want(e) {
					return true
				}
			case <-deadline:
				return false
			}
		}
	}
	if !waitEvent(func(e string) bool { return e == "snapshot" }, 30*time.Second) {
		t.Fatal("no snapshot event")
	}
	time.Sleep(timeout + 3*time.Second)
	if r := g.order(1, newKey(), cart(line("ramen", 1))); r.Status != 200 {
		t.Fatalf("order: %d %s", r.Status, r.Body)
	}
	if !waitEvent(func(e string) bool { return e != "ping" && e != "snapshot" }, 30*time.Second) {
		t.Fatalf("the order placed %v after the stream opened never reached it (write timeout %v)", timeout+3*time.Second, timeout)
	}
}
