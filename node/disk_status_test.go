package node_test

import (
	"testing"
	"time"

	"masterorder/node/nodetest"
)

// Every box reports its card at the top of its status, and each member's
// as fetched over the internal channel; /metrics exports it.
func TestDiskInStatusAndMetrics(t *testing.T) {
	c := nodetest.Start(t, 3, nil, nil, nil)
	_, n := c.WaitLeader(5 * time.Second)
	deadline := time.Now().Add(15 * time.Second)
	for {
		s := n.Status()
		known := 0
		for _, m := range s.Nodes {
			if m.Disk != nil && m.Disk.TotalBytes > 0 && m.Disk.State != "" {
				known++
			}
		}
		if s.Disk != nil && s.Disk.TotalBytes > 0 && s.Disk.FreeBytes > 0 && known == len(c.Nodes) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status after 15 s: disk %+v, members %+v", s.Disk, s.Nodes)
		}
		time.Sleep(100 * time.Millisecond)
	}
	families, err := n.Metrics().Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			name := f.GetName()
			for _, l := range m.GetLabel() {
				name += "/" + l.GetValue()
			}
			got[name] = m.GetGauge().GetValue()
		}
	}
	state := n.Disk().State
	if got["masterorder_disk_free_bytes"] <= 0 || got["masterorder_disk_total_bytes"] <= 0 || got["masterorder_disk_state/"+state] != 1 {
		t.Fatalf("metrics: free %v total %v state %s=%v", got["masterorder_disk_free_bytes"], got["masterorder_disk_total_bytes"], state, got["masterorder_disk_state/"+state])
	}
	if _, ok := got["masterorder_fsm_paused"]; !ok {
		t.Fatal("no masterorder_fsm_paused")
	}
}
