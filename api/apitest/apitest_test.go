package apitest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// recorder collects what the transport reports.
type recorder struct {
	mu   sync.Mutex
	msgs []string
}

func (r *recorder) report(msg string) { r.mu.Lock(); r.msgs = append(r.msgs, msg); r.mu.Unlock() }

// roundTrip serves one answer and sends one request through the checking
// transport, returning what it reported.
func roundTrip(t *testing.T, method, path string, hdr map[string]string, body string, answer func(w http.ResponseWriter)) []string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		answer(w)
	}))
	defer srv.Close()
	rec := &recorder{}
	hc := &http.Client{Transport: &Transport{Contract: MustLoad(t), Report: rec.report}}
	req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode == 0 || (len(b) == 0 && method != http.MethodHead && res.StatusCode == 200 && res.Header.Get("Content-Type") == "application/json") {
		t.Fatalf("the caller did not get the answer: %d %q", res.StatusCode, b)
	}
	return rec.msgs
}

func jsonAnswer(status int, body string, hdr ...string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		for i := 0; i+1 < len(hdr); i += 2 {
			w.Header().Set(hdr[i], hdr[i+1])
		}
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

const session = "/api/guest/sessions/abcdefghijklmnop0123"

// What the contract allows passes; a field, a status or a reason code it
// lacks is reported, and so is a route it does not have.
// deepBody is a hostile test's body: arrays nested 5000 deep.
var deepBody = strings.Repeat("[", 5000) + strings.Repeat("]", 5000)

func TestTransportReportsMismatches(t *testing.T) {
	pin := map[string]string{"X-Session-PIN": "1234"}
	pinJSON := map[string]string{"X-Session-PIN": "1234", "Content-Type": "application/json"}
	cases := []struct {
		name         string
		method, path string
		hdr          map[string]string
		body         string
		answer       func(http.ResponseWriter)
		want         string // "" = no report
	}{
		{"documented answer", "GET", session, pin, "",
			jsonAnswer(200, `{"sessionId":"abcdefghijklmnop0123","tableId":"T1","status":"ACTIVE"}`, "X-MasterOrder-Stale", "false"), ""},
		{"documented refusal", "GET", session, pin, "",
			jsonAnswer(410, `{"allowed":false,"reasonCode":"SESSION_CLOSED","message":"closed"}`), ""},
		{"undocumented field", "GET", session, pin, "",
			jsonAnswer(200, `{"sessionId":"abcdefghijklmnop0123","tableId":"T1","status":"ACTIVE","secret":"x"}`), "secret"},
		{"undocumented status", "GET", session, pin, "",
			jsonAnswer(418, `{"allowed":false,"reasonCode":"NOT_FOUND","message":"teapot"}`), "418"},
		{"undocumented reason code", "GET", session, pin, "",
			jsonAnswer(404, `{"allowed":false,"reasonCode":"NO_SUCH_REASON","message":"?"}`), "reasonCode"},
		{"bad header value", "GET", session, pin, "",
			jsonAnswer(200, `{"sessionId":"abcdefghijklmnop0123","tableId":"T1","status":"ACTIVE"}`, "X-MasterOrder-Stale", "maybe"), "X-MasterOrder-Stale"},
		{"undocumented route answered", "GET", "/api/guest/whatever", nil, "",
			jsonAnswer(200, `{}`), "not in the document"},
		{"undocumented route refused as such", "GET", "/api/guest/whatever", nil, "",
			jsonAnswer(404, `{"allowed":false,"reasonCode":"NOT_FOUND","message":"nf"}`), ""},
		{"a refused bad request", "POST", session + "/calls", pin, `{"kind":"pizza"}`,
			jsonAnswer(400, `{"allowed":false,"reasonCode":"INVALID_REQUEST","message":"bad"}`), ""},
		{"a bad request accepted", "POST", session + "/calls", pin, `{"kind":"pizza"}`,
			jsonAnswer(200, `{"callId":1,"sessionId":"s","tableId":"T1","kind":"staff","status":"OPEN","createdAt":"2026-01-02T03:04:05Z"}`), "refuses this request"},
		// JSON bodies are held to the schema compiled once (schemas.go).
		{"a JSON body", "POST", session + "/calls", pinJSON, `{"kind":"staff"}`,
			jsonAnswer(200, `{"callId":1,"sessionId":"s","tableId":"T1","kind":"staff","status":"OPEN","createdAt":"2026-01-02T03:04:05Z"}`), ""},
		{"a bad JSON body accepted", "POST", session + "/calls", pinJSON, `{"kind":"pizza"}`,
			jsonAnswer(200, `{"callId":1,"sessionId":"s","tableId":"T1","kind":"staff","status":"OPEN","createdAt":"2026-01-02T03:04:05Z"}`), "refuses this request"},
		{"a JSON body with an unknown field accepted", "POST", session + "/calls", pinJSON, `{"kind":"staff","x":1}`,
			jsonAnswer(200, `{"callId":1,"sessionId":"s","tableId":"T1","kind":"staff","status":"OPEN","createdAt":"2026-01-02T03:04:05Z"}`), "refuses this request"},
		{"a body that is not JSON accepted", "POST", session + "/calls", pinJSON, `{"kind":`,
			jsonAnswer(200, `{"callId":1,"sessionId":"s","tableId":"T1","kind":"staff","status":"OPEN","createdAt":"2026-01-02T03:04:05Z"}`), "refuses this request"},
		{"a body nested thousands deep accepted", "POST", session + "/calls", pinJSON, deepBody,
			jsonAnswer(200, `{"callId":1,"sessionId":"s","tableId":"T1","kind":"staff","status":"OPEN","createdAt":"2026-01-02T03:04:05Z"}`), "refuses this request"},
		{"a body nested thousands deep refused", "POST", "/api/staff/login", map[string]string{"Content-Type": "application/json"}, deepBody,
			jsonAnswer(400, `{"allowed":false,"reasonCode":"INVALID_REQUEST","message":"bad"}`), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			msgs := roundTrip(t, c.method, c.path, c.hdr, c.body, c.answer)
			switch {
			case c.want == "" && len(msgs) > 0:
				t.Fatalf("reported a valid exchange: %q", msgs)
			case c.want != "" && (len(msgs) == 0 || !strings.Contains(strings.Join(msgs, "\n"), c.want)):
				t.Fatalf("want a report naming %q, got %q", c.want, msgs)
			}
		})
	}
}

// Kitchen stream events are checked as the caller reads them.
func TestTransportChecksStreamEvents(t *testing.T) {
	stream := func(events string) func(w http.ResponseWriter) {
		return func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Header().Set("X-MasterOrder-Stale", "false")
			w.WriteHeader(200)
			io.WriteString(w, "retry: 1000\n\n"+events)
		}
	}
	good := "id: 7\nevent: session.closed\ndata: {\"type\":\"session.closed\",\"sessionId\":\"s\",\"tableId\":\"T1\"}\n\nevent: ping\ndata:\n\n"
	auth := map[string]string{"Authorization": "Bearer x"}
	if msgs := roundTrip(t, "GET", "/api/kitchen/stream", auth, "", stream(good)); len(msgs) > 0 {
		t.Fatalf("reported valid events: %q", msgs)
	}
	bad := "id: 8\nevent: session.closed\ndata: {\"type\":\"session.closed\",\"sessionId\":\"s\",\"tableId\":\"T1\",\"extra\":1}\n\nid: 9\nevent: order.exploded\ndata: {}\n\n"
	msgs := roundTrip(t, "GET", "/api/kitchen/stream", auth, "", stream(bad))
	if all := strings.Join(msgs, "\n"); !strings.Contains(all, "extra") || !strings.Contains(all, "order.exploded") {
		t.Fatalf("want reports of the extra field and the unknown event, got %q", msgs)
	}
}

// An exchange seen elsewhere (a browser's) is judged as the transport
// judges its own.
func TestCheckExchange(t *testing.T) {
	c := MustLoad(t)
	req, _ := http.NewRequest("GET", "http://box"+session, nil)
	req.Header.Set("X-Session-PIN", "1234")
	hdr := http.Header{"Content-Type": {"application/json"}}
	var got []string
	c.CheckExchange(req, nil, 200, hdr, []byte(`{"sessionId":"abcdefghijklmnop0123","tableId":"T1","status":"ACTIVE"}`), func(m string) { got = append(got, m) })
	if len(got) > 0 {
		t.Fatalf("reported a valid exchange: %q", got)
	}
	c.CheckExchange(req, nil, 200, hdr, []byte(`{"sessionId":"abcdefghijklmnop0123","tableId":"T1","status":"ACTIVE","pin":"1234"}`), func(m string) { got = append(got, m) })
	if len(got) != 1 || !strings.Contains(got[0], "pin") {
		t.Fatalf("want one report of the pin field, got %q", got)
	}
}

// BenchmarkRequestCheckDeepBody: what checking one deeply nested request
// body costs the caller (it runs inside the request's timeout).
func BenchmarkRequestCheckDeepBody(b *testing.B) {
	c := MustLoad(b)
	for b.Loop() {
		req, _ := http.NewRequest("POST", "http://127.0.0.1:1/api/staff/login", strings.NewReader(deepBody))
		req.Header.Set("Content-Type", "application/json")
		if ex := c.request(req, []byte(deepBody)); ex.reqErr == nil {
			b.Fatal("the document accepted a body of nested arrays")
		}
	}
}
