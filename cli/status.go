package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"masterorder/node"
)

// status: one box's view of the cluster.
var statusCommand = command{
	name:  "status",
	usage: "masterorder status --url URL\n",
	run:   status,
}

func status(ctx context.Context, args []string, e env) error {
	fs := e.flags("status")
	url := fs.String("url", "", "any node's base URL, e.g. http://192.168.1.10:8080")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *url == "" {
		return badUsage("status needs --url")
	}
	stdout := e.stdout
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, *url+"/api/cluster/status", nil)
	if err != nil {
		return badFlag("--url", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("ask %s: %w", *url, err)
	}
	defer resp.Body.Close()
	var s node.Status
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		return fmt.Errorf("read status from %s: %w", *url, err)
	}
	leader := "none"
	if s.Leader != nil {
		leader = s.Leader.ID + " (" + s.Leader.HTTPAddr + ")"
	}
	fmt.Fprintf(stdout, "node %s: %s, term %d, leader %s\n", s.NodeID, s.State, s.Term, leader)
	fmt.Fprintf(stdout, "commit index %d, applied %d, fsm time %d ms", s.CommitIndex, s.AppliedIndex, s.FSMTime)
	fmt.Fprintln(stdout)
	if c := s.Clock; c != nil {
		fmt.Fprintf(stdout, "clock %s, from %s", time.UnixMilli(c.Wall).UTC().Format(time.RFC3339), c.Source)
		if !c.ClusterTrusted {
			fmt.Fprint(stdout, " (no box knows the time: a manager sets it from the staff console)")
		}
		if c.SetError != "" {
			fmt.Fprintf(stdout, "; cannot set it: %s", c.SetError)
		}
		fmt.Fprintln(stdout)
	} else if s.ClockSuspect {
		fmt.Fprintln(stdout, "this box's wall clock looks wrong")
	}
	if s.Disk != nil {
		fmt.Fprintf(stdout, "this box's memory card: %s\n", diskWords(*s.Disk))
	}
	fmt.Fprintf(stdout, "%-8s %-22s %-22s %-9s %-9s %s\n", "ID", "HTTP", "RAFT", "SUFFRAGE", "REACHABLE", "MEMORY CARD")
	for _, m := range s.Nodes {
		card := "unknown"
		if m.Disk != nil {
			card = diskWords(*m.Disk)
		}
		fmt.Fprintf(stdout, "%-8s %-22s %-22s %-9s %-9v %s\n", m.ID, m.HTTPAddr, m.RaftAddr, m.Suffrage, m.Reachable, card)
	}
	if s.CloudSync != nil {
		b, _ := json.Marshal(s.CloudSync)
		fmt.Fprintf(stdout, "cloud sync: %s\n", b)
	}
	return nil
}

// diskWords says a box's card in plain words, with its free space.
func diskWords(d node.DiskStatus) string {
	var what string
	switch d.State {
	case node.DiskOK:
		what = "fine"
	case node.DiskLow:
		what = "getting full (backups paused; free some space or use a larger card)"
	case node.DiskFull:
		what = "FULL: this box takes no orders, the other boxes do; free space or replace the card"
	case node.DiskReadOnly:
		what = "READ-ONLY (failing): the other boxes take the orders; replace the card"
	case node.DiskSlow:
		what = "very slow (worn): orders continue; replace the card soon"
	default:
		what = d.State
	}
	s := fmt.Sprintf("%s, %s free of %s", what, humanBytes(d.FreeBytes), humanBytes(d.TotalBytes))
	if d.State != node.DiskOK && !d.Since.IsZero() {
		s += ", since " + d.Since.Local().Format("15:04:05")
	}
	return s
}

// humanBytes writes a size as an owner reads it (MB, GB).
func humanBytes(b uint64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%d MB", b>>20)
	default:
		return fmt.Sprintf("%d KB", b>>10)
	}
}
