package setup

import (
	"context"
	"fmt"
	"testing"
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
	if _, err := tb.client(t).Claim(ctx5(t), "another-box", ""); err != nil {
		t.Fatal(err)
	}
	if p := w.Progress(); p.State != JobIdle || p.Error != "" || len(p.Boxes) != 0 {
		t.Errorf("claimed by another box's wizard, the box still reports %+v, want idle", p)
	}
}
