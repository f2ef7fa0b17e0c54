package node_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"masterorder/node/nodetest"
)

// TestRaftLogHasSmallPages: a Raft log this build creates has 1 KiB pages
// (node.go, raftLogPageSize: each batch's commit rewrites fewer disk pages),
// and survives a restart with its entries.
func TestRaftLogHasSmallPages(t *testing.T) {
	c := nodetest.Start(t, 1, nil, nil, nil)
	_, n := c.WaitLeader(10 * time.Second)
	for i := 0; i < 50; i++ {
		if _, err := n.KV().SetIfAbsent(context.Background(), fmt.Sprintf("lock:k%02d", i), make([]byte, 900), time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	c.StopNode(0)
	path := filepath.Join(c.Configs[0].DataDir, "raft", "raft.db")
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	size := db.Info().PageSize
	db.Close()
	if size != 1024 {
		t.Fatalf("raft.db has %d-byte pages, want 1024", size)
	}
	n = c.StartNode(0)
	c.WaitLeader(10 * time.Second)
	c.WaitConverged(10 * time.Second)
	if e, ok, err := n.KV().Get("lock:k49"); err != nil || !ok || len(e.Value) != 900 {
		t.Fatalf("after a restart: %v %v %d bytes", ok, err, len(e.Value))
	}
}
