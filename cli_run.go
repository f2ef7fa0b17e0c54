package main

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"os"

	"masterorder/node"
	"masterorder/orders"
)

// cmdRun runs one box from its config file until SIGTERM.
func cmdRun(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", "", "node config file (TOML)")
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	if *path == "" {
		return usageError{"run needs --config node.toml"}
	}
	cfg, err := orders.LoadConfig(*path)
	if err != nil {
		return err
	}
	log := newLogger(cfg.Log, os.Stdout)
	memLimit := node.SetMemoryLimit()
	n, _, err := startStore(ctx, cfg, log, orders.Options{})
	if err != nil {
		if ctx.Err() != nil {
			log.Info("stopped before start completed", "error", err)
			return nil // SIGTERM while waiting for a peer: a clean stop
		}
		return err
	}
	log.Info("node started", "node", cfg.NodeID, "http", cfg.HTTPAddr, "raft", cfg.RaftAddr, "version", version, "memory_limit_mib", memLimit>>20)
	<-ctx.Done()
	log.Info("shutting down")
	n.Stop()
	return nil
}

// startStore opens one node with the domain attached (both from one
// config file) and starts it; ctx
// ends a start that waits for a peer's snapshot (no usable local one).
func startStore(ctx context.Context, cfg orders.FileConfig, log *slog.Logger, svcOpts orders.Options) (*node.Node, *orders.Service, error) {
	opts := orders.NodeOptions()
	opts.Logger = log
	n, err := node.New(cfg.NodeConfig, opts)
	if err != nil {
		return nil, nil, err
	}
	svc, err := orders.Attach(n, cfg.Config, svcOpts)
	if err != nil {
		n.Stop()
		return nil, nil, err
	}
	if err := n.StartContext(ctx); err != nil {
		return nil, nil, err
	}
	return n, svc, nil
}
