package setup

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"time"

	"masterorder/setup/cluster"
)

// follow watches each box come up: answering (started), in the cluster
// with every other box (joined), ready to take orders (ready).
// Boxes that were not configured keep the error of their push.
func (w *Wizard) follow(ctx context.Context, req CreateRequest, peers []cluster.Peer, configured []bool) {
	hc := &http.Client{Timeout: 3 * time.Second}
	get := func(url string) (int, []byte) {
		r, err := hc.Get(url)
		if err != nil {
			return 0, nil
		}
		defer r.Body.Close()
		// One Read may return part of the body: read it all (bounded).
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<16))
		if err != nil {
			return 0, nil
		}
		return r.StatusCode, body
	}
	for {
		allReady := true
		for i, p := range peers {
			if !configured[i] {
				continue
			}
			base := "http://" + p.HTTPAddr
			step := ""
			if code, _ := get(base + "/healthz"); code == http.StatusOK {
				step = StepStarted
				if code, body := get(base + "/api/cluster/status"); code == http.StatusOK && listsAll(body, peers) {
					step = StepJoined
					if code, _ := get(base + "/readyz"); code == http.StatusOK {
						step = StepReady
					}
				}
			}
			if step != "" {
				w.setStep(i, step, Reason{})
			}
			if step != StepReady {
				allReady = false
			}
		}
		if allReady {
			break
		}
		select {
		case <-ctx.Done():
			w.fail("TIMEOUT")
			return
		case <-time.After(500 * time.Millisecond):
		}
	}
	d := &Done{ShopName: req.ShopName, GuestURL: guestURL(req.GuestName, w.box.ports.HTTP) + "/"}
	first := peers[0]
	// Staff and kitchen screens keep the store's name, not a box's
	// address: the boxes answer it wherever DHCP puts them (the leader
	// answers, so a dead box does not take it along), and every box's
	// HTTPS certificate names it (cluster.HTTPSHosts).
	d.StaffURL = nameURL("https", req.GuestName, first.HTTPSAddr, "443") + "/staff/"
	d.KitchenURL = nameURL("https", req.GuestName, first.HTTPSAddr, "443") + "/kitchen/"
	// The certificate is installed once, now, while this address holds:
	// by a box's address, so a tablet that opens no .local name gets it too.
	d.CAURL = "http://" + first.HTTPAddr + "/ca"
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, p := range peers {
		if configured[i] {
			d.Boxes = append(d.Boxes, DoneBox{NodeID: p.ID, Hostname: w.progress.Boxes[i].Hostname, StaffURL: "https://" + p.HTTPSAddr + "/staff/"})
		}
	}
	w.progress.State, w.progress.Done = JobDone, d
}

// listsAll reports whether a status body (guest view) lists every peer.
func listsAll(body []byte, peers []cluster.Peer) bool {
	var s struct {
		Nodes []struct {
			ID string `json:"id"`
		} `json:"nodes"`
	}
	if json.Unmarshal(body, &s) != nil {
		return false
	}
	have := map[string]bool{}
	for _, n := range s.Nodes {
		have[n.ID] = true
	}
	for _, p := range peers {
		if !have[p.ID] {
			return false
		}
	}
	return true
}

// nameURL is scheme://name with addr's port unless it is the scheme's
// default port.
func nameURL(scheme, name, addr, defaultPort string) string {
	_, port, err := net.SplitHostPort(addr)
	if err != nil || port == defaultPort {
		return scheme + "://" + name
	}
	return scheme + "://" + net.JoinHostPort(name, port)
}
