package setup

import (
	"context"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/mdns"
)

// Found is a box seen on the LAN, before anything it says is trusted: its
// fingerprint is what the claimer will pin.
type Found struct {
	ID          string `json:"id"`
	State       Mode   `json:"state"`
	Version     string `json:"version"`
	Fingerprint string `json:"fp"`
	Addr        string `json:"addr"` // host:port of its setup page
	Via         string `json:"via"`  // "mdns" or "probe"
}

// Browse asks the LAN for boxes for up to wait and returns what answered
// (a box answering twice is listed once). mDNS is lossy by design: the
// question is asked three times within wait (RFC 6762 §5.2 repeats it
// too), and the answers are merged.
func Browse(ctx context.Context, wait time.Duration) ([]Found, error) {
	seen := map[string]Found{}
	var firstErr error
	for round := 0; round < 3 && ctx.Err() == nil; round++ {
		entries := make(chan *mdns.ServiceEntry, 64)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for e := range entries {
				if f, ok := parseEntry(e); ok {
					seen[f.ID] = f
				}
			}
		}()
		err := mdns.QueryContext(ctx, &mdns.QueryParam{Service: ServiceType, Domain: "local", Timeout: wait / 3, Entries: entries,
			DisableIPv6: true, Logger: quietLog})
		close(entries)
		<-done
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	out := make([]Found, 0, len(seen))
	for _, f := range seen {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	if len(out) > 0 {
		return out, nil
	}
	return out, firstErr
}

// parseEntry reads a DNS-SD answer; one without an id or fingerprint is
// not a MasterOrder box.
func parseEntry(e *mdns.ServiceEntry) (Found, bool) {
	if !strings.Contains(e.Name, ServiceType) || e.AddrV4 == nil || e.Port <= 0 {
		return Found{}, false
	}
	f := Found{Addr: net.JoinHostPort(e.AddrV4.String(), strconv.Itoa(e.Port)), Via: "mdns"}
	for _, kv := range e.InfoFields {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "id":
			f.ID = v
		case "state":
			f.State = Mode(v)
		case "version":
			f.Version = v
		case "fp":
			f.Fingerprint = strings.ToLower(v)
		}
	}
	if f.ID == "" || len(f.Fingerprint) != 64 {
		return Found{}, false
	}
	return f, true
}
