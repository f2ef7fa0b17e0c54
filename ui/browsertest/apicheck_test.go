package browsertest

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"masterorder/api/apitest"
)

// checkPageAPICalls checks every API call the pages of a tab make (the
// guest app, the kitchen screen, the console, the setup wizard) against api/openapi.yaml,
// as the tests' own calls are: the browser reports each request and
// answer, and a mismatch fails t. Streams and failed loads are left out.
func checkPageAPICalls(t *testing.T, ctx context.Context) {
	c := apitest.MustLoad(t)
	var mu sync.Mutex
	ended := false
	t.Cleanup(func() { mu.Lock(); ended = true; mu.Unlock() })
	report := func(msg string) {
		mu.Lock()
		defer mu.Unlock()
		if !ended {
			t.Errorf("api/openapi.yaml mismatch (a page's call): %s", msg)
		}
	}
	type call struct {
		req    *network.Request
		res    *network.Response
		stream bool
	}
	calls := map[network.RequestID]*call{}
	done := make(chan network.RequestID, 1024)
	err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *network.EventRequestWillBeSent:
			if u, err := url.Parse(e.Request.URL); err == nil && (strings.HasPrefix(u.Path, "/api/") || strings.HasPrefix(u.Path, "/setup/api/")) && e.Request.Method != http.MethodOptions {
				calls[e.RequestID] = &call{req: e.Request}
			}
		case *network.EventResponseReceived:
			if cl := calls[e.RequestID]; cl != nil {
				cl.res = e.Response
				cl.stream = strings.HasPrefix(e.Response.MimeType, "text/event-stream")
			}
		case *network.EventLoadingFailed:
			delete(calls, e.RequestID)
		case *network.EventLoadingFinished:
			if cl := calls[e.RequestID]; cl != nil && (cl.res == nil || cl.stream) {
				delete(calls, e.RequestID)
			} else if cl != nil {
				select {
				case done <- e.RequestID: // fn must not block: a full queue skips the call
				default:
					delete(calls, e.RequestID)
				}
			}
		}
	})
	if err != nil {
		t.Fatalf("listen to the tab's network: %v", err)
	}
	go func() {
		for {
			var id network.RequestID
			select {
			case <-ctx.Done():
				return
			case id = <-done:
			}
			mu.Lock()
			cl := calls[id]
			delete(calls, id)
			mu.Unlock()
			body, err := chromedp.Call(ctx, network.GetResponseBody, network.GetResponseBodyParams{RequestID: id})
			if err != nil {
				continue // the page moved on or the tab closed: the body is gone
			}
			req, err := http.NewRequest(cl.req.Method, cl.req.URL, nil)
			if err != nil {
				continue
			}
			req.Header = headers(cl.req.Headers)
			var reqBody []byte
			for _, e := range cl.req.PostDataEntries {
				reqBody = append(reqBody, e.Bytes...)
			}
			if cl.res.Status == http.StatusNotFound && strings.HasPrefix(req.URL.Path, "/api/staff/cluster/") &&
				(strings.HasPrefix(req.URL.Path, "/api/staff/cluster/setup-boxes") || req.URL.Path == "/api/staff/cluster/join") {
				// The console's add and replace are mounted by `masterorder
				// run` (cli/member.go), not by the in-process stores these tests
				// start: their 404 is the harness's, not a box's.
				continue
			}
			c.CheckExchange(req, reqBody, int(cl.res.Status), headers(cl.res.Headers), body.Body, report)
		}
	}()
}

// headers turns the browser's header map into an http.Header (several
// values of one header arrive joined by newlines).
func headers(in network.Headers) http.Header {
	h := http.Header{}
	for k, v := range in {
		s, ok := v.(string)
		if !ok {
			continue
		}
		for _, one := range strings.Split(s, "\n") {
			h.Add(k, one)
		}
	}
	return h
}
