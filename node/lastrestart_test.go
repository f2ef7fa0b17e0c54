package node_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"masterorder/api/apitest"
	"masterorder/node"
	"masterorder/node/nodetest"
	"masterorder/node/restart"
)

// A box's status tells why each member last started: nothing after a
// first start; "stop" for a box restarted cleanly, on itself and, over
// the internal channel, on the others.
func TestLastRestartInStatus(t *testing.T) {
	c := nodetest.Start(t, 3, nil, nil, nil)
	_, n := c.WaitLeader(10 * time.Second)
	for _, m := range n.Status().Nodes {
		if m.LastRestart != nil {
			t.Fatalf("first start: member %s has a last restart %+v", m.ID, m.LastRestart)
		}
	}
	f, _ := c.Follower()
	id := c.Configs[f].NodeID
	before := time.Now()
	c.StopNode(f)
	restarted := c.StartNode(f)
	if r := restarted.LastRestart(); r == nil || r.Reason != restart.Stop || r.StoppedAt == nil || r.At.Before(before.Truncate(time.Second)) {
		t.Fatalf("restarted box: %+v", r)
	}
	_, leader := c.WaitLeader(10 * time.Second)
	deadline := time.Now().Add(20 * time.Second)
	for {
		var got *restart.Record
		for _, m := range leader.Status().Nodes {
			if m.ID == id {
				got = m.LastRestart
			} else if m.LastRestart != nil {
				t.Fatalf("member %s never restarted, yet %+v", m.ID, m.LastRestart)
			}
		}
		if got != nil {
			if got.Reason != restart.Stop {
				t.Fatalf("leader's view of %s: %+v", id, got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the leader never heard why %s restarted", id)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The same over HTTP, checked against the contract (a loopback
	// caller gets the full status).
	cli := apitest.Client(t, &http.Client{Timeout: 5 * time.Second})
	resp, err := cli.Get("http://" + leader.Config().HTTPAddr + "/api/cluster/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st node.Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	for _, m := range st.Nodes {
		if (m.ID == id) != (m.LastRestart != nil) {
			t.Fatalf("over HTTP: member %s last restart %+v", m.ID, m.LastRestart)
		}
	}
}
