package setup

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"masterorder/orders/orderstest"
	"masterorder/setup/cluster"
)

// A refusal wrapped on its way up keeps its reason code: not UNREACHABLE.
func TestReasonOfAWrappedRefusal(t *testing.T) {
	err := fmt.Errorf("claim box 1: %w", &RefusedError{Status: 403, Code: "CLAIM_WINDOW_CLOSED", Message: "closed"})
	if r := ReasonOf(err); r.Error != "CLAIM_WINDOW_CLOSED" || r.Detail != "closed" {
		t.Errorf("ReasonOf(wrapped refusal) = %+v", r)
	}
	if r := ReasonOf(fmt.Errorf("push: %w", ErrFingerprint)); r.Error != "FINGERPRINT_MISMATCH" {
		t.Errorf("ReasonOf(wrapped ErrFingerprint) = %+v", r)
	}
	if r := ReasonOf(context.DeadlineExceeded); r.Error != "UNREACHABLE" {
		t.Errorf("ReasonOf(timeout) = %+v", r)
	}
}

// A box whose own wizard failed, then claimed by another box's wizard,
// no longer reports its failure: the owner made the shop from another box
// (issue 39 #2).
func TestFailedProgressIsStaleOnceAnotherBoxClaims(t *testing.T) {
	tb := newTestBox(t, t.TempDir(), nil)
	w := tb.Wizard()
	w.mu.Lock()
	w.progress = Progress{Job: Job{State: JobFailed, Reason: Reason{Error: "UNREACHABLE"}}, Boxes: []BoxProgress{{ID: tb.Identity().ID, Step: StepFound}}}
	w.mu.Unlock()
	if p := w.Progress(); p.State != JobFailed {
		t.Fatalf("its own failure, nothing else happened: %q, want failed", p.State)
	}
	c := tb.client(t)
	tok, err := c.Claim(ctx5(t), "another-box", "")
	if err != nil {
		t.Fatal(err)
	}
	if p := w.Progress(); p.State != JobIdle || p.Error != "" || len(p.Boxes) != 0 {
		t.Errorf("claimed by another box's wizard, the box still reports %+v, want idle", p)
	}
	// Configured by that wizard (the claim file gone with it): still idle,
	// even after a failure of its own reported since.
	cl, err := cluster.New("test-shop")
	if err != nil {
		t.Fatal(err)
	}
	cl.StaffPasswordHash, cl.KitchenPasswordHash = orderstest.PasswordHash(t, "manager pw 1"), orderstest.PasswordHash(t, "kitchen pw 2")
	_, port, _ := strings.Cut(tb.Addr(), ":")
	self := cluster.Box{ID: "b", Host: "127.0.0.1", HTTPPort: port, RaftPort: "17000", HTTPSPort: "1443"}
	bundle, err := cl.Bundle(self, cl.Peers([]cluster.Box{self}), false, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Configure(ctx5(t), tok, bundle); err != nil {
		t.Fatal(err)
	}
	<-tb.started
	w.mu.Lock()
	w.progress = Progress{Job: Job{State: JobFailed, Reason: Reason{Error: "UNREACHABLE"}}}
	w.mu.Unlock()
	if p := w.Progress(); p.State != JobIdle {
		t.Errorf("configured by another box's wizard, the box reports %+v, want idle", p)
	}
}
