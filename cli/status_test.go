package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"masterorder/node"
)

// masterorder status says each box's memory card in plain words.
func TestStatusSaysTheCardInWords(t *testing.T) {
	since := time.Date(2026, 12, 3, 10, 42, 7, 0, time.UTC)
	st := node.Status{NodeID: "a", State: "follower",
		Disk: &node.DiskStatus{State: node.DiskOK, FreeBytes: 20 << 30, TotalBytes: 29 << 30, Since: since},
		Nodes: []node.MemberStatus{
			{ID: "a", Reachable: true, Disk: &node.DiskStatus{State: node.DiskOK, FreeBytes: 20 << 30, TotalBytes: 29 << 30}},
			{ID: "b", Reachable: true, Disk: &node.DiskStatus{State: node.DiskFull, FreeBytes: 0, TotalBytes: 29 << 30, Since: since}},
			{ID: "c", Reachable: false},
		}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { json.NewEncoder(w).Encode(st) }))
	defer srv.Close()
	var out, errOut strings.Builder
	if err := status(context.Background(), []string{"--url", srv.URL}, testEnv(&out, &errOut)); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{
		"this box's memory card: fine, 20.0 GB free of 29.0 GB",
		"FULL: this box takes no orders, the other boxes do; free space or replace the card, 0 KB free of 29.0 GB, since ",
		"unknown",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("status output lacks %q:\n%s", want, text)
		}
	}
}
