package update

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"
)

// The rolling update. One record in the replicated KV says what is under
// way, so any box's console shows it and a new leader carries it on. The
// leader updates the followers one at a time (install, restart, back in
// the cluster and caught up), then hands its leadership over; the new
// leader updates the old one. A box that fails stops the rollout.

// rolloutKey is the rollout record's KV key.
const rolloutKey = "update:rollout"

// States of a rollout and of each box in it.
const (
	RolloutRunning = "running"
	RolloutDone    = "done"
	RolloutStopped = "stopped"

	StepWaiting    = "waiting"    // not its turn yet
	StepInstalling = "installing" // fetching, verifying, writing the other slot
	StepRestarting = "restarting" // starting again, rejoining, catching up
	StepDone       = "done"       // runs the new version, committed and caught up
	StepFailed     = "failed"     // see the rollout's reason
	StepHandover   = "handover"   // the leader hands its leadership over first
)

// Record is the rollout as the KV keeps it.
type Record struct {
	State          string    `json:"state"`
	Version        string    `json:"version"`
	SHA256         string    `json:"sha256"`
	Source         string    `json:"source"` // the box holding the bundle
	AllowDowngrade bool      `json:"allowDowngrade,omitempty"`
	Boxes          []BoxStep `json:"boxes"`
	// FailedBox and Reason say why it stopped.
	FailedBox string `json:"failedBox,omitempty"`
	Reason
}

// BoxStep is one box's place in the rollout.
type BoxStep struct {
	NodeID string `json:"nodeId"`
	From   string `json:"from"`
	Step   string `json:"step"`
}

func (r *Record) box(id string) *BoxStep {
	for i := range r.Boxes {
		if r.Boxes[i].NodeID == id {
			return &r.Boxes[i]
		}
	}
	return nil
}

// Rollout is the current or last rollout (nil: none yet), from this
// box's replica.
func (b *Box) Rollout() (*Record, error) {
	e, ok, err := b.n.KV().Get(rolloutKey)
	if err != nil || !ok {
		return nil, err
	}
	var r Record
	if err := json.Unmarshal(e.Value, &r); err != nil {
		return nil, fmt.Errorf("rollout record: %w", err)
	}
	return &r, nil
}

func (b *Box) putRollout(ctx context.Context, r *Record) error {
	raw, err := json.Marshal(r)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	return b.n.KV().Put(ctx, rolloutKey, raw, 0)
}

func (b *Box) notRollingOut() error {
	if r, err := b.Rollout(); err == nil && r != nil && r.State == RolloutRunning {
		return refuse(CodeBusy, "a rollout to %s is under way", r.Version)
	}
	return nil
}

// peerReport asks member id for its update report over the internal
// channel (this box answers for itself).
func (b *Box) peerReport(ctx context.Context, id string) (BoxReport, error) {
	if id == b.n.Config().NodeID {
		return b.report(), nil
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	resp, err := b.n.PeerRequest(ctx, id, http.MethodGet, "/internal/update/state", nil)
	if err != nil {
		return BoxReport{NodeID: id}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return BoxReport{NodeID: id}, fmt.Errorf("update state of %s: status %d", id, resp.StatusCode)
	}
	var rep BoxReport
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&rep); err != nil {
		return BoxReport{NodeID: id}, err
	}
	rep.Reachable = true
	return rep, nil
}

// Reports is every member's report, in member order; a box that does not
// answer is there, unreachable.
func (b *Box) Reports(ctx context.Context) []BoxReport {
	members := b.n.Members()
	out := make([]BoxReport, len(members))
	done := make(chan struct{}, len(members))
	for i, m := range members {
		go func() {
			rep, _ := b.peerReport(ctx, m.ID)
			rep.NodeID = m.ID
			out[i] = rep
			done <- struct{}{}
		}()
	}
	for range members {
		<-done
	}
	return out
}

// Start begins a rollout of the offered bundle: refused unless every box
// answers, is ready (in the cluster, caught up) and no update is under
// way on any; a downgrade needs allowDowngrade.
func (b *Box) Start(ctx context.Context, allowDowngrade bool) (*Record, error) {
	staged := b.Staged()
	if staged.State != StagedReady {
		return nil, refuse(CodeNoBundle, "no verified bundle is offered on this box")
	}
	if staged.Downgrade && !allowDowngrade {
		return nil, refuse(CodeDowngrade, "bundle %s is older than %s", staged.Version, b.version)
	}
	if err := b.notRollingOut(); err != nil {
		return nil, err
	}
	r := &Record{State: RolloutRunning, Version: staged.Version, SHA256: staged.SHA256, Source: b.n.Config().NodeID, AllowDowngrade: allowDowngrade}
	for _, rep := range b.Reports(ctx) {
		switch {
		case !rep.Reachable:
			return nil, refuse(CodeBoxDown, "box %s does not answer", rep.NodeID)
		case !rep.Ready:
			return nil, refuse(CodeBoxDown, "box %s is not in the cluster or not caught up", rep.NodeID)
		case rep.State == StateReceiving || rep.State == StateInstalling || rep.State == StateRebooting || rep.State == StateTrial:
			return nil, refuse(CodeBusy, "box %s is updating (%s)", rep.NodeID, rep.State)
		}
		step := StepWaiting
		if rep.Version == staged.Version {
			step = StepDone // a box already on it (an earlier, stopped rollout)
		}
		r.Boxes = append(r.Boxes, BoxStep{NodeID: rep.NodeID, From: rep.Version, Step: step})
	}
	if err := b.putRollout(ctx, r); err != nil {
		return nil, err
	}
	b.log.Info("update: rollout started", "version", r.Version, "boxes", len(r.Boxes))
	return r, nil
}

// runRollout is the leader's worker: it carries a running rollout on
// until it is done or stopped, or this box stops leading.
func (b *Box) runRollout(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		if r, err := b.Rollout(); err == nil && r != nil && r.State == RolloutRunning {
			if err := b.drive(ctx, r); err != nil && ctx.Err() == nil {
				b.log.Warn("update: rollout step", "error", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// next is the box to update now: a follower not yet done, in member
// order; the leader itself only when every other box is done.
func (r *Record) next(self string) *BoxStep {
	ids := make([]string, 0, len(r.Boxes))
	for _, s := range r.Boxes {
		ids = append(ids, s.NodeID)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if s := r.box(id); id != self && s.Step != StepDone {
			return s
		}
	}
	if s := r.box(self); s != nil && s.Step != StepDone {
		return s
	}
	return nil
}

// drive takes the rollout one box further (or to its end).
func (b *Box) drive(ctx context.Context, r *Record) error {
	self := b.n.Config().NodeID
	s := r.next(self)
	if s == nil {
		r.State = RolloutDone
		b.log.Info("update: rollout done", "version", r.Version)
		return b.putRollout(ctx, r)
	}
	if s.NodeID == self {
		// Every follower runs the new version: hand the leadership over;
		// the new leader's worker updates this box.
		s.Step = StepHandover
		if err := b.putRollout(ctx, r); err != nil {
			return err
		}
		b.log.Info("update: handing leadership over to update this box")
		if err := b.n.Raft().LeadershipTransfer().Error(); err != nil {
			return fmt.Errorf("leadership transfer: %w", err)
		}
		<-ctx.Done()
		return nil
	}
	return b.updateBox(ctx, r, s)
}

// updateBox asks one box to install and waits until it runs the new
// version, committed and caught up, or stops the rollout.
func (b *Box) updateBox(ctx context.Context, r *Record, s *BoxStep) error {
	id := s.NodeID
	stop := func(reason Reason) error {
		s.Step, r.State, r.FailedBox, r.Reason = StepFailed, RolloutStopped, id, reason
		b.log.Error("update: rollout stopped", "box", id, "code", reason.Error, "detail", reason.Detail)
		return b.putRollout(ctx, r)
	}
	rep, err := b.peerReport(ctx, id)
	if s.Step == StepWaiting || s.Step == StepHandover {
		if err != nil {
			return stop(Reason{Error: CodeBoxDown, Detail: fmt.Sprintf("box %s does not answer: %v", id, err)})
		}
		s.Step = StepInstalling
		if err := b.putRollout(ctx, r); err != nil {
			return err
		}
		body, _ := json.Marshal(installRequest{Version: r.Version, SHA256: r.SHA256, From: r.Source, AllowDowngrade: r.AllowDowngrade})
		if rep.Version != r.Version || rep.State != StateCommitted {
			rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			resp, err := b.n.PeerRequest(rctx, id, http.MethodPost, "/internal/update/install", bytes.NewReader(body))
			cancel()
			if err != nil {
				return stop(Reason{Error: CodeBoxDown, Detail: fmt.Sprintf("box %s: %v", id, err)})
			}
			msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			resp.Body.Close()
			if resp.StatusCode != http.StatusAccepted {
				return stop(Reason{Error: CodeBusy, Detail: fmt.Sprintf("box %s: %d %s", id, resp.StatusCode, bytes.TrimSpace(msg))})
			}
		}
	}
	// Wait for it, bounded: a new leader resuming the rollout waits again
	// from its start.
	deadline := time.Now().Add(b.cfg.BoxTimeout.Duration)
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		rep, err := b.peerReport(ctx, id)
		if err == nil {
			switch {
			case rep.Version == r.Version && rep.State == StateCommitted && rep.Ready:
				s.Step = StepDone
				b.log.Info("update: box updated", "box", id, "version", r.Version)
				return b.putRollout(ctx, r)
			case rep.State == StateRolledBack && rep.To == r.Version:
				return stop(Reason{Error: CodeRolledBack, Detail: fmt.Sprintf("box %s: %s", id, rep.Detail)})
			case rep.State == StateFailed && rep.To == r.Version:
				return stop(Reason{Error: rep.Error, Detail: fmt.Sprintf("box %s: %s", id, rep.Detail)})
			case rep.State == StateRebooting || rep.State == StateTrial:
				if s.Step != StepRestarting {
					s.Step = StepRestarting
					b.putRollout(ctx, r)
				}
			}
		} else if s.Step != StepRestarting {
			s.Step = StepRestarting
			b.putRollout(ctx, r)
		}
		if time.Now().After(deadline) {
			return stop(Reason{Error: CodeBoxTimeout, Detail: fmt.Sprintf("box %s was not back on %s within %v", id, r.Version, b.cfg.BoxTimeout.Duration)})
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}
