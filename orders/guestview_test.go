package orders_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// serveAs runs one request through node i's router as if it came from
// addr (a phone on the Wi-Fi), without a network.
func serveAs(s *store, i int, addr, method, path string, hdr map[string]string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, nil)
	req.RemoteAddr = addr
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	s.c.Nodes[i].Echo().ServeHTTP(rec, req)
	return rec
}

// A guest's phone asks for the cluster status and the metrics: it gets the
// node list the SDK fails over with, nothing of the cluster's inner
// state, and no /metrics; staff (a token) and the box itself get all.
func TestGuestsSeeOnlyTheNodeList(t *testing.T) {
	s := startStore(t, 3, nil)
	phone := "192.168.1.77:50000"
	rec := serveAs(s, 0, phone, "GET", "/api/cluster/status", nil)
	var got map[string]any
	json.Unmarshal(rec.Body.Bytes(), &got)
	if rec.Code != 200 || got["nodes"] == nil {
		t.Fatalf("guest status: %d %s", rec.Code, rec.Body)
	}
	for _, hidden := range []string{"term", "commitIndex", "appliedIndex", "fsmTime", "cloudSync", "leader", "raftAddr", "suffrage"} {
		if strings.Contains(rec.Body.String(), `"`+hidden+`"`) {
			t.Errorf("guest status shows %s: %s", hidden, rec.Body)
		}
	}
	if nodes, _ := got["nodes"].([]any); len(nodes) != 3 {
		t.Errorf("guest status nodes: %s", rec.Body)
	}
	if rec := serveAs(s, 1, phone, "GET", "/metrics", nil); rec.Code != 401 {
		t.Errorf("guest /metrics: %d", rec.Code)
	}
	staff := map[string]string{"Authorization": "Bearer " + s.token}
	if rec := serveAs(s, 1, phone, "GET", "/metrics", staff); rec.Code != 200 {
		t.Errorf("staff /metrics: %d", rec.Code)
	}
	if rec := serveAs(s, 2, phone, "GET", "/api/cluster/status", staff); !strings.Contains(rec.Body.String(), `"commitIndex"`) {
		t.Errorf("staff status: %s", rec.Body)
	}
	if r := s.do(0, "GET", "/api/cluster/status", nil, nil); !strings.Contains(string(r.Body), `"commitIndex"`) {
		t.Errorf("loopback status: %s", r.Body)
	}
	_ = http.StatusOK
}

// The pages may call this box and the other members, nothing else: an
// injected script could not post what it reads to a server of its own.
func TestCSPConnectsOnlyToMembers(t *testing.T) {
	s := startStore(t, 3, nil)
	csp := s.do(0, "GET", "/guest/", nil, nil).Header.Get("Content-Security-Policy")
	var connect string
	for _, d := range strings.Split(csp, ";") {
		if f := strings.Fields(d); len(f) > 0 && f[0] == "connect-src" {
			connect = strings.Join(f[1:], " ")
		}
	}
	for _, c := range s.c.Configs {
		if !strings.Contains(connect, "http://"+c.HTTPAddr) {
			t.Errorf("connect-src %q lacks member %s", connect, c.HTTPAddr)
		}
	}
	for _, f := range strings.Fields(connect) {
		if f == "http:" || f == "https:" || f == "*" {
			t.Errorf("connect-src allows any origin: %q", connect)
		}
	}
}
