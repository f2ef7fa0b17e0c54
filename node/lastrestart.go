package node

import (
	"os"
	"time"

	"masterorder/node/restart"
)

// A box tells the others, and the console's Boxes page, why it last
// started (node/restart): a clean stop, its unit's watchdog, a crash, a
// power cut. Each start marks its run in the data directory; Stop records
// a clean end (or the error the box gave up on), and systemd's
// ExecStopPost (`masterorder stopped`) adds the unit's own words.

// beginRun marks this run and keeps why it started.
func (n *Node) beginRun() {
	rec, run, err := restart.Begin(n.cfg.DataDir, n.opts.WallClock(), restart.BootID("/"), os.Getenv("INVOCATION_ID"))
	if err != nil {
		n.log.Warn("cannot mark this run: the next start will not tell why it started", "error", err)
		return
	}
	n.run = run
	if rec.Reason == "" {
		return
	}
	n.lastRestart = &rec
	args := []any{"reason", rec.Reason, "rebooted", rec.Rebooted}
	if rec.StoppedAt != nil {
		args = append(args, "stopped_at", rec.StoppedAt.Format(time.RFC3339))
	}
	if rec.ServiceResult != "" {
		args = append(args, "service_result", rec.ServiceResult, "exit_code", rec.ExitCode, "exit_status", rec.ExitStatus)
	}
	if rec.Detail != "" {
		args = append(args, "detail", rec.Detail)
	}
	if rec.Reason == restart.Stop {
		n.log.Info("last run ended cleanly", args...)
	} else {
		n.log.Warn("last run did not end cleanly", args...)
	}
}

// endRun records how this run ended (Stop): cleanly, or the error the box
// gave up on (fail).
func (n *Node) endRun() {
	reason, detail := restart.Stop, ""
	if err := n.failed.Load(); err != nil {
		reason, detail = restart.Error, (*err).Error()
	}
	if err := n.run.Stopped(n.opts.WallClock(), reason, detail); err != nil {
		// A card that refuses writes cannot take this either.
		n.log.Warn("cannot record how this run ended", "error", err)
	}
}

// LastRestart is why this box last started (nil: its first start on this
// data directory). At is when, on this box's wall clock as it is now: a
// clock set right after boot (no real-time clock, no network yet) is
// corrected once the box has the time.
func (n *Node) LastRestart() *restart.Record {
	if n.lastRestart == nil || n.started.IsZero() {
		return nil
	}
	rec := *n.lastRestart
	rec.At = n.opts.WallClock().Add(-time.Since(n.started)).Truncate(time.Second).UTC()
	return &rec
}

// PeerRestart is why a member last started, as it last reported it (nil:
// never, or its first start).
func (n *Node) PeerRestart(id string) *restart.Record {
	if id == n.cfg.NodeID {
		return n.LastRestart()
	}
	n.disk.mu.Lock()
	defer n.disk.mu.Unlock()
	return n.disk.peers[id].LastRestart
}
