package orders_test

import (
	"testing"
)

// The profiler (how `bench --closed-loop --cpuprofile` finds where a
// node's time goes) answers staff and the box itself, never a phone: a
// guest must not read the process's insides or make it spend CPU
// profiling itself.
func TestProfilerOnlyForStaffAndTheBox(t *testing.T) {
	s := startStore(t, 1, nil)
	phone := "192.168.1.77:50000"
	for _, p := range []string{"/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/profile?seconds=1", "/debug/pprof/cmdline", "/debug/pprof/goroutine?debug=1"} {
		if rec := serveAs(s, 0, phone, "GET", p, nil); rec.Code != 401 {
			t.Errorf("phone %s: %d", p, rec.Code)
		}
	}
	staff := map[string]string{"Authorization": "Bearer " + s.token}
	for _, p := range []string{"/debug/pprof/heap", "/debug/pprof/cmdline", "/debug/pprof/goroutine?debug=1"} {
		if rec := serveAs(s, 0, phone, "GET", p, staff); rec.Code != 200 || rec.Body.Len() == 0 {
			t.Errorf("staff %s: %d, %d bytes", p, rec.Code, rec.Body.Len())
		}
	}
	if r := s.do(0, "GET", "/debug/pprof/", nil, nil); r.Status != 200 {
		t.Errorf("loopback /debug/pprof/: %d", r.Status)
	}
}
