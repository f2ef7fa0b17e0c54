package node

import (
	"testing"
	"time"
)

// TestPeerProbeDownSince: a box that stops answering is "down since" the
// last time it answered; one never heard from is down since probing
// began; an answer clears it; a removed member is forgotten.
func TestPeerProbeDownSince(t *testing.T) {
	var p peerProbe
	t0 := time.Date(2026, 12, 3, 10, 40, 0, 0, time.UTC)
	if ok, since := p.state("b"); ok || !since.IsZero() {
		t.Fatalf("before the first round: %v %v", ok, since)
	}
	p.record(t0, map[string]bool{"b": true}, []string{"b", "c"})
	if ok, since := p.state("b"); !ok || !since.IsZero() {
		t.Fatalf("b answered: %v %v", ok, since)
	}
	if ok, since := p.state("c"); ok || !since.Equal(t0) {
		t.Fatalf("c never heard from: %v %v, want down since %v", ok, since, t0)
	}
	t1 := t0.Add(2 * time.Minute)
	p.record(t1, map[string]bool{"c": true}, []string{"b", "c"})
	p.record(t1.Add(2*time.Second), map[string]bool{"c": true}, []string{"b", "c"})
	if ok, since := p.state("b"); ok || !since.Equal(t0) {
		t.Fatalf("b silent after %v: %v %v", t0, ok, since)
	}
	if ok, since := p.state("c"); !ok || !since.IsZero() {
		t.Fatalf("c answers now: %v %v", ok, since)
	}
	p.record(t1.Add(4*time.Second), map[string]bool{}, []string{"c"})
	if _, ok := p.lastSeen["b"]; ok {
		t.Fatal("a removed member is still remembered")
	}
	// A member added after the last round: not probed yet, no "since".
	if ok, since := p.state("d"); ok || !since.IsZero() {
		t.Fatalf("a member not probed yet: %v %v", ok, since)
	}
	if ok, since := p.state("c"); ok || !since.Equal(t1.Add(2*time.Second)) {
		t.Fatalf("c silent: %v %v", ok, since)
	}
}
