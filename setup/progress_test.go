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
