package node

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"time"

	"masterorder/node/restart"
	"masterorder/node/wallclock"
)

// peerReport is what GET /internal/disk answers: a box's card and why it
// last started (lastrestart.go), for the others' status. A box of an
// older version answers only the card.
type peerReport struct {
	DiskStatus
	LastRestart *restart.Record `json:"lastRestart,omitempty"`
	// Clock is the box's clock (clock.go); absent from older versions.
	Clock *wallclock.State `json:"clock,omitempty"`
}

// serveDisk is GET /internal/disk: this box's card and last restart for
// the others' status.
func (n *Node) serveDisk(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	clk := n.wall.State()
	json.NewEncoder(w).Encode(peerReport{DiskStatus: n.Disk(), LastRestart: n.LastRestart(), Clock: &clk})
}

// peerDiskEvery: how often each member's card is asked for.
const peerDiskEvery = 2 * time.Second

// fetchPeerDisks asks every other member for its card.
func (n *Node) fetchPeerDisks() {
	defer n.wg.Done()
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return
	}
	var wg sync.WaitGroup
	for _, srv := range f.Configuration().Servers {
		if string(srv.ID) == n.cfg.NodeID {
			continue
		}
		wg.Add(1)
		go func(id, addr string) {
			defer wg.Done()
			n.fetchPeerDisk(n.ctx, id, addr)
		}(string(srv.ID), string(srv.Address))
	}
	wg.Wait()
}

// fetchPeerDisk asks a member for its card (short timeout) and keeps the
// answer; a member that does not answer keeps what it last reported.
func (n *Node) fetchPeerDisk(ctx context.Context, id, raftAddr string) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, n.internalURL(raftAddr, "/internal/disk"), nil)
	if err != nil {
		return
	}
	req.Header.Set(secretHeader, n.cfg.ClusterSecret)
	resp, err := n.diskHTTP.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	var s peerReport
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 8192)).Decode(&s) != nil || s.State == "" {
		return
	}
	n.disk.mu.Lock()
	if n.disk.peers == nil {
		n.disk.peers = map[string]peerReport{}
	}
	n.disk.peers[id] = s
	n.disk.mu.Unlock()
	n.peerClock(id, s.Clock)
}
