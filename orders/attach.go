package orders

import (
	"context"
	"errors"
	"net/http"
	"time"

	"masterorder/node"
	"masterorder/orders/store"
)

// NodeOptions are what the domain contributes to a node: its commands and
// its schema.
func NodeOptions() node.Options {
	return node.Options{Register: Register, Migrate: store.Migrate}
}

// Attach builds the service on n with the domain's settings cfg,
// registers its routes and leader-only workers. Call it after node.New
// and before Start.
func Attach(n *node.Node, cfg Config, opts Options) (*Service, error) {
	if opts.Pages == nil {
		// A member without its pages would be a box no browser can use:
		// the start path passes them in (ui.Routes).
		return nil, errors.New("orders.Attach: Options.Pages is nil (pass ui.Routes)")
	}
	if cfg.PublicURL == "" {
		// No router name: the QR codes carry the name the boxes answer
		// by mDNS, when the store has one.
		cfg.PublicURL = n.GuestNameURL()
	}
	s, err := New(n, cfg, opts)
	if err != nil {
		return nil, err
	}
	if cfg.PublicURL != "" {
		// Pages loaded through the store's one address call the boxes
		// directly when it fails over.
		n.AllowOrigin(cfg.PublicURL)
	}
	if err := s.startCloudSync(n); err != nil {
		return nil, err
	}
	s.Routes(n.Echo())
	// Full cluster status and /metrics are for staff (node/https.go).
	n.SetStaffCheck(func(r *http.Request) bool { _, _, err := s.auth.Authenticate(r); return err == nil })
	s.instrument(n)
	n.AddLeaderWorker("housekeeping", s.housekeepingWorker)
	go s.rejectionFlusher()
	n.AddLeaderWorker("printing", s.printWorker)
	return s, nil
}

// housekeepingWorker archives closed sessions' orders and prunes old audit
// and archive rows, a bounded batch at a time.
func (s *Service) housekeepingWorker(ctx context.Context) {
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := s.Housekeep(ctx); err != nil && ctx.Err() == nil {
			s.node.Logger().Warn("housekeeping", "error", err)
		}
	}
}

// Housekeep runs one housekeeping command.
func (s *Service) Housekeep(ctx context.Context) error {
	// Only the retentions: Apply judges them on FSM time.
	const day = 24 * time.Hour
	cmd := housekeepingCmd{Limit: 1000,
		AuditKeepMs:   (time.Duration(s.cfg.Retention.AuditDays) * day).Milliseconds(),
		ArchiveKeepMs: (time.Duration(s.cfg.Retention.ArchiveDays) * day).Milliseconds()}
	_, err := refused(s.propose(ctx, CmdHousekeeping, cmd, false))
	return err
}
