package update_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"masterorder/node"
	"masterorder/node/nodetest"
	"masterorder/update"
)

// The release index: read only when asked; nothing newer, another board
// and an unreadable index are refused; a bundle whose bytes do not match
// the index's sha256 is never offered.
func TestReleaseIndex(t *testing.T) {
	var idx atomic.Pointer[update.ReleaseIndex]
	var hits atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("GET /index.json", func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if i := idx.Load(); i != nil {
			json.NewEncoder(w).Encode(i)
			return
		}
		w.Write([]byte("<html>not an index</html>"))
	})
	mux.HandleFunc("GET /b.raucb", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(strings.Repeat("x", 100))) })
	srv := httptest.NewServer(mux)
	defer srv.Close()

	var box *update.Box
	c := nodetest.Start(t, 1, func(_ int, c *node.Config) {
		c.Update.ReleaseIndexURL = srv.URL + "/index.json"
	}, nil, func(_ int, n *node.Node) {
		b, err := update.New(n, update.Options{Version: "1.2.0", Installer: &recorder{}})
		if err != nil {
			t.Fatal(err)
		}
		box = b
	})
	if hits.Load() != 0 {
		t.Fatal("the index was read before anyone asked")
	}
	ctx := context.Background()
	refused := func(what, code string) {
		t.Helper()
		_, err := box.Check(ctx)
		var r *update.Refusal
		if !errors.As(err, &r) || r.Code != code {
			t.Fatalf("%s: %v, want %s", what, err, code)
		}
	}
	refused("not an index", update.CodeIndexFailed)
	sum := strings.Repeat("ab", 32)
	idx.Store(&update.ReleaseIndex{Version: "1.2.0", Compatible: "masterorder-rpi-arm64", URL: "b.raucb", SHA256: sum, Size: 100})
	refused("the version it runs", update.CodeCurrent)
	idx.Store(&update.ReleaseIndex{Version: "1.3.0", Compatible: "masterorder-x86", URL: "b.raucb", SHA256: sum, Size: 100})
	refused("another board", update.CodeWrongBoard)

	idx.Store(&update.ReleaseIndex{Version: "1.3.0", Compatible: "masterorder-rpi-arm64", URL: "b.raucb", SHA256: sum, Size: 100})
	s, err := box.Check(ctx)
	if err != nil || s.State != update.StagedDownloading {
		t.Fatalf("a newer version: %+v, %v", s, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for box.Staged().State == update.StagedDownloading {
		if time.Now().After(deadline) {
			t.Fatal("the download did not end")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if s := box.Staged(); s.State != update.StagedFailed || s.Error != update.CodeCorrupt {
		t.Fatalf("a download that does not match the index: %+v", s)
	}

	// A bundle the card cannot hold beside the store's log is refused
	// before a byte is written.
	for c.Nodes[0].Disk().TotalBytes == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the card was never measured")
		}
		time.Sleep(20 * time.Millisecond)
	}
	_, err = box.Upload(ctx, strings.NewReader("never read"), int64(c.Nodes[0].Disk().FreeBytes), nil)
	var r *update.Refusal
	if !errors.As(err, &r) || r.Code != update.CodeNoRoom {
		t.Fatalf("a bundle as large as the free space: %v, want %s", err, update.CodeNoRoom)
	}
}
