package update

import "testing"

// A box's state after its restart: on the new version it is in trial; on
// the old one the boot loader (or its launcher) went back by itself; a
// restart in the middle of an install leaves it failed on its version.
func TestResumeState(t *testing.T) {
	saved := BoxState{State: StateRebooting, From: "1.0.0", To: "1.1.0", SHA256: "x"}
	if s := resumeState(saved, "1.1.0"); s.State != StateTrial || s.Error != "" {
		t.Fatalf("on the new version: %+v", s)
	}
	if s := resumeState(saved, "1.0.0"); s.State != StateRolledBack || s.Error != CodeRolledBack || s.To != "1.1.0" {
		t.Fatalf("back on the old version: %+v", s)
	}
	trial := BoxState{State: StateTrial, From: "1.0.0", To: "1.1.0"}
	if s := resumeState(trial, "1.0.0"); s.State != StateRolledBack {
		t.Fatalf("a trial that ended on the old version: %+v", s)
	}
	if s := resumeState(BoxState{State: StateInstalling, To: "1.1.0"}, "1.0.0"); s.State != StateFailed || s.Error != CodeInstallFailed {
		t.Fatalf("restarted while installing: %+v", s)
	}
	for _, st := range []string{StateIdle, StateCommitted, StateRolledBack, StateFailed} {
		if s := resumeState(BoxState{State: st, To: "1.1.0"}, "1.1.0"); s.State != st {
			t.Fatalf("%s changed to %+v", st, s)
		}
	}
}

// The leader updates the followers first, in a fixed order, and itself
// only when every other box is done.
func TestRolloutOrder(t *testing.T) {
	r := &Record{Boxes: []BoxStep{{NodeID: "c", Step: StepWaiting}, {NodeID: "a", Step: StepWaiting}, {NodeID: "b", Step: StepWaiting}}}
	var order []string
	for s := r.next("a"); s != nil; s = r.next("a") {
		order = append(order, s.NodeID)
		s.Step = StepDone
	}
	if got := fmtList(order); got != "b c a" {
		t.Fatalf("order %s, want b c a (followers first, the leader last)", got)
	}
}

func fmtList(l []string) string {
	out := ""
	for i, s := range l {
		if i > 0 {
			out += " "
		}
		out += s
	}
	return out
}
