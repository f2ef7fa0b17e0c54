package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestProfileSeconds(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want int
	}{{200 * time.Millisecond, 1}, {12 * time.Second, 12}, {12600 * time.Millisecond, 13}, {time.Minute, 25}} {
		if got := profileSeconds(c.d); got != c.want {
			t.Errorf("profileSeconds(%s) = %d, want %d", c.d, got, c.want)
		}
	}
}

// TestProfileWindowWritesEachMembersProfile: one file per member that
// serves pprof, named after it, asked for the window's length; a member
// without pprof (etcd not started with --enable-pprof) is left out, not
// fatal; the callers' own profile is written beside them.
func TestProfileWindowWritesEachMembersProfile(t *testing.T) {
	asked := make(chan string, 2)
	pprofOn := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/debug/pprof/profile" {
			http.NotFound(w, r)
			return
		}
		asked <- r.URL.Query().Get("seconds")
		w.Write([]byte("profile of " + r.Host))
	}))
	defer pprofOn.Close()
	pprofOff := httptest.NewServer(http.NotFoundHandler())
	defer pprofOff.Close()

	dir := t.TempDir()
	ms := []*member{{name: "m1", client: pprofOn.URL}, {name: "m2", client: pprofOff.URL}, {name: "m3", client: pprofOn.URL}}
	files := profileWindow(context.Background(), dir, ms, 1200*time.Millisecond)
	want := []string{filepath.Join(dir, "callers.pprof"), filepath.Join(dir, "m1.pprof"), filepath.Join(dir, "m3.pprof")}
	if !slices.Equal(files, want) {
		t.Fatalf("files = %q, want %q", files, want)
	}
	for range 2 {
		if s := <-asked; s != "1" {
			t.Errorf("asked for seconds=%s, want 1", s)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "m1.pprof")); err != nil || string(b) != "profile of "+pprofOn.Listener.Addr().String() {
		t.Errorf("m1.pprof = %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "m2.pprof")); !os.IsNotExist(err) {
		t.Errorf("m2.pprof written for a member without pprof: %v", err)
	}
	if st, err := os.Stat(filepath.Join(dir, "callers.pprof")); err != nil || st.Size() == 0 {
		t.Errorf("callers.pprof: %v (size %v)", err, st)
	}
}
