package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"time"

	"masterorder/node"
)

// status: one box's view of the cluster.

func cmdStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("url", "", "any node's base URL, e.g. http://192.168.1.10:8080")
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	if *url == "" {
		return usageError{"status needs --url"}
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, *url+"/api/cluster/status", nil)
	if err != nil {
		return usageError{"--url: " + err.Error()}
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
	if s.ClockSuspect {
		fmt.Fprint(stdout, "  (this box's wall clock looks wrong)")
	}
	fmt.Fprintln(stdout)
	fmt.Fprintf(stdout, "%-8s %-22s %-22s %-9s %s\n", "ID", "HTTP", "RAFT", "SUFFRAGE", "REACHABLE")
	for _, m := range s.Nodes {
		fmt.Fprintf(stdout, "%-8s %-22s %-22s %-9s %v\n", m.ID, m.HTTPAddr, m.RaftAddr, m.Suffrage, m.Reachable)
	}
	if s.CloudSync != nil {
		b, _ := json.Marshal(s.CloudSync)
		fmt.Fprintf(stdout, "cloud sync: %s\n", b)
	}
	return nil
}
