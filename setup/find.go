package setup

import (
	"context"
	"sort"
	"sync"
	"time"
)

// Candidate is a box found on the LAN whose info was read over the TLS
// channel pinned to the fingerprint it announced (or presented, for a
// probe address); Self marks the box the wizard runs on, asked directly.
// The wizard and the console keep their last listing as Candidates: only
// a listed box can be claimed.
type Candidate struct {
	Found
	Info Info
	Self bool
}

// BoxView is one box as the wizard and the console list it.
type BoxView struct {
	ID           string `json:"id"`
	ShortCode    string `json:"shortCode"`
	Hostname     string `json:"hostname"`
	Model        string `json:"model,omitempty"`
	Serial       string `json:"serial,omitempty"`
	Self         bool   `json:"self"`
	WindowOpen   bool   `json:"windowOpen"`
	CodeRequired bool   `json:"codeRequired"`
	Via          string `json:"via"`
}

// View is the box as a page lists it.
func (c Candidate) View() BoxView {
	return BoxView{ID: c.ID, ShortCode: ShortCode(c.ID), Hostname: c.Info.Device.Hostname, Model: c.Info.Device.Model,
		Serial: c.Info.Device.Serial, Self: c.Self, WindowOpen: c.Info.WindowOpen, CodeRequired: c.Info.CodeRequired, Via: c.Via}
}

// FindOptions say where to look.
type FindOptions struct {
	MDNS  bool          // browse _masterorder._tcp
	Wait  time.Duration // how long to listen for mDNS answers (0: 1.5 s)
	Probe []string      // setup addresses (host:port) to ask directly
	// States keeps only boxes in these modes (nil: setup mode only).
	States []Mode
}

// Find lists the boxes that answer, by id (mDNS first when a box is
// found both ways), sorted by hostname then id. Boxes announcing a mode
// outside opts.States are skipped before anything is asked of them.
func Find(ctx context.Context, opts FindOptions) []Candidate {
	want := map[Mode]bool{ModeSetup: true}
	if opts.States != nil {
		want = map[Mode]bool{}
		for _, s := range opts.States {
			want[s] = true
		}
	}
	wait := opts.Wait
	if wait <= 0 {
		wait = 1500 * time.Millisecond
	}
	var mu sync.Mutex
	seen := map[string]Candidate{}
	conflict := map[string]bool{}
	add := func(c Candidate) {
		mu.Lock()
		defer mu.Unlock()
		if old, ok := seen[c.ID]; ok {
			if old.Fingerprint != c.Fingerprint {
				// Two keys answer for one box id: one is an impostor.
				// Neither is listed, so the owner cannot tick the wrong one.
				conflict[c.ID] = true
			}
			if old.Via == "mdns" {
				return
			}
		}
		seen[c.ID] = c
	}
	var wg sync.WaitGroup
	ask := func(f Found) {
		defer wg.Done()
		ictx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		info, err := NewClient(f.Addr, f.Fingerprint).Info(ictx)
		if err != nil || info.ID != f.ID || !want[info.State] {
			return
		}
		add(Candidate{Found: f, Info: info})
	}
	if opts.MDNS {
		found, _ := Browse(ctx, wait)
		for _, f := range found {
			if want[f.State] {
				wg.Add(1)
				go ask(f)
			}
		}
	}
	for _, addr := range opts.Probe {
		wg.Add(1)
		go func(addr string) {
			defer wg.Done()
			pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			info, err := Probe(pctx, addr)
			if err != nil || !want[info.State] {
				return
			}
			add(Candidate{Found: Found{ID: info.ID, State: info.State, Version: info.Version, Fingerprint: info.Fingerprint, Addr: addr, Via: "probe"}, Info: info})
		}(addr)
	}
	wg.Wait()
	out := make([]Candidate, 0, len(seen))
	for id, c := range seen {
		if !conflict[id] {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Info.Device.Hostname != out[j].Info.Device.Hostname {
			return out[i].Info.Device.Hostname < out[j].Info.Device.Hostname
		}
		return out[i].ID < out[j].ID
	})
	return out
}
