package node

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"time"

	"masterorder/node/certrenew"
	"masterorder/node/restart"
	"masterorder/node/wallclock"
)

// peerReport is what GET /internal/disk answers: a box's card, why it
// last started (lastrestart.go) and its certificates (certs.go), for the
// others' status. A box of an older version answers only the card.
type peerReport struct {
	DiskStatus
	LastRestart  *restart.Record   `json:"lastRestart,omitempty"`
	Certificates *certrenew.Status `json:"certificates,omitempty"`
	// Build is the box's build level and update trial (featurelevel.go);
	// a box from before the feature level answers none.
	Build *BuildReport `json:"build,omitempty"`
	// Clock is the box's clock (clock.go); absent from older versions.
	Clock *wallclock.State `json:"clock,omitempty"`

	at time.Time // when this box received it
}

// serveDisk is GET /internal/disk: this box's card, last restart and
// build for the others' status and the feature level's raise.
func (n *Node) serveDisk(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	b := n.Build()
	clk := n.wall.State()
	json.NewEncoder(w).Encode(peerReport{DiskStatus: n.Disk(), LastRestart: n.LastRestart(), Certificates: n.CertStatus(), Build: &b, Clock: &clk})
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
// It tells whether the member answered.
func (n *Node) fetchPeerDisk(ctx context.Context, id, raftAddr string) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, n.internalURL(raftAddr, "/internal/disk"), nil)
	if err != nil {
		return false
	}
	req.Header.Set(secretHeader, n.cfg.ClusterSecret)
	resp, err := n.diskHTTP.Load().Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var s peerReport
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 16384)).Decode(&s) != nil || s.State == "" {
		return false
	}
	s.at = time.Now()
	n.disk.mu.Lock()
	if n.disk.peers == nil {
		n.disk.peers = map[string]peerReport{}
	}
	n.disk.peers[id] = s
	n.disk.mu.Unlock()
	n.peerClock(id, s.Clock)
	return true
}
