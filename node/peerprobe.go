package node

import (
	"net/http"
	"sync"
	"time"

	"masterorder/node/lanname"
)

// peerProbe asks the other members' /healthz every couple of seconds so
// the status can say which boxes this one reaches, and since when a box
// has not answered. It is node-local display state, never replicated.
type peerProbe struct {
	mu sync.Mutex
	ok map[string]bool
	// lastSeen is when a member last answered; joined is when this box
	// first saw it in the configuration (or began probing), the "since"
	// of a box never heard from.
	lastSeen map[string]time.Time
	joined   map[string]time.Time
	probed   bool
}

// state tells whether id answered the last probe and, when it did not,
// since when it has been silent (zero before the first round).
func (p *peerProbe) state(id string) (reachable bool, downSince time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ok[id] || !p.probed {
		return p.ok[id], time.Time{}
	}
	if t, ok := p.lastSeen[id]; ok {
		return false, t
	}
	// Not probed yet (a member added a moment ago): no "since" to tell.
	return false, p.joined[id]
}

// record stores one round's answers, taken at now; members no longer in
// the configuration are forgotten.
func (p *peerProbe) record(now time.Time, res map[string]bool, members []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lastSeen == nil {
		p.lastSeen, p.joined = map[string]time.Time{}, map[string]time.Time{}
	}
	p.probed = true
	keep := map[string]bool{}
	for _, id := range members {
		keep[id] = true
		if _, ok := p.joined[id]; !ok {
			p.joined[id] = now
		}
		if res[id] {
			p.lastSeen[id] = now
		}
	}
	for id := range p.joined {
		if !keep[id] {
			delete(p.lastSeen, id)
			delete(p.joined, id)
		}
	}
	p.ok = res
}

func (p *peerProbe) run(n *Node) {
	defer n.wg.Done()
	client := &http.Client{Timeout: time.Second}
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	var local localAddrs
	for {
		if local.changed(lanname.InterfaceAddrs()) {
			n.log.Info("this box has new addresses: looking for the others again", "addrs", lanname.InterfaceAddrs())
			n.renewPeerClients()
			n.book.miss("")
			// The tablets reach this box at its new address at once (the
			// status's httpsAddr): its HTTPS certificate must name it.
			if r := n.certs.Load(); r != nil {
				r.Check()
			}
		}
		res := map[string]bool{}
		var members []string
		if f := n.raft.GetConfiguration(); f.Error() == nil {
			for _, srv := range f.Configuration().Servers {
				id := string(srv.ID)
				addr := n.MemberHTTP(id)
				if id == n.cfg.NodeID || addr == "" {
					continue
				}
				members = append(members, id)
				resp, err := client.Get("http://" + addr + "/healthz")
				if err == nil {
					resp.Body.Close()
					res[id] = resp.StatusCode == http.StatusOK
				} else {
					// Silent where it was: ask the LAN where it is now.
					n.book.miss(id)
				}
			}
		}
		p.record(n.opts.WallClock(), res, members)
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
		}
	}
}
