// Command masterorder runs a restaurant's mobile ordering on the store
// LAN: one binary, one node of a three-box Raft cluster.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"masterorder/bench"
	"masterorder/node"
)

// Set at build time: -ldflags "-X main.version=… -X main.commit=… -X main.buildDate=…".
var (
	version   = "dev"
	commit    = "unknown"
	buildDate = "unknown"
)

const usage = `masterorder — store ordering appliance

usage:
  masterorder demo [--nodes 1|3] [--listen 127.0.0.1:8080] [--data-dir DIR] [--staff-password PW]
  masterorder run [--config node.toml]   (no config anywhere: setup mode)
        [--etc-dir DIR] [--state-dir DIR] [--boot-dir DIR] [--sys-root DIR] [--listen :80]
        [--https-port 443] [--raft-port 7000] [--claim-window 30m] [--window-from-start]
        [--probe HOST:PORT,...] [--mdns=true]
  masterorder demo --setup [--listen 127.0.0.1:8080] [--data-dir DIR]   (three unconfigured boxes: walk the setup wizard)
  masterorder reset --yes [--etc-dir DIR] [--state-dir DIR]   (factory reset, on the box: setup mode next time)
  masterorder stopped [--config node.toml] [--etc-dir DIR] [--state-dir DIR]   (the unit's ExecStopPost: records how the run ended)
  masterorder init --shop-id ID --nodes a=HOST:HTTPPORT:RAFTPORT[:HTTPSPORT],... --out DIR
        [--staff-password PW] [--kitchen-password PW] [--public-url URL]
        [--plain-http] [--force] [--systemd]
  masterorder init --add-node ID=HOST:HTTPPORT:RAFTPORT[:HTTPSPORT] --out DIR [--systemd] [--force]
  masterorder init --renew-https --out DIR   (fresh 800-day HTTPS certificates for every box)
  masterorder bench --url URL[,URL...] [flags]   (masterorder bench -h)
  masterorder status --url URL
  masterorder members add|remove|promote --url URL --id ID [...]   (masterorder members -h)
  masterorder backup --url URL --out FILE [--password PW]
  masterorder restore --in FILE --config node.toml
  masterorder rotate-secrets --out DIR   (new cluster and token secrets; restart every box)
  masterorder version
  masterorder help
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cmd, rest := args[0], args[1:]
	var err error
	switch cmd {
	case "run":
		err = cmdRun(ctx, rest, stderr)
	case "demo":
		err = cmdDemo(ctx, rest, stdout, stderr)
	case "init":
		err = cmdInit(rest, stdout, stderr)
	case "bench":
		return bench.Main(ctx, rest, stdout, stderr)
	case "status":
		err = cmdStatus(ctx, rest, stdout, stderr)
	case "members":
		err = cmdMembers(ctx, rest, stdout, stderr)
	case "backup":
		err = cmdBackup(ctx, rest, stdout, stderr)
	case "restore":
		err = cmdRestore(rest, stdout, stderr)
	case "reset":
		err = cmdReset(rest, stdout, stderr)
	case "stopped":
		err = cmdStopped(rest, stderr)
	case "rotate-secrets":
		err = cmdRotateSecrets(rest, stdout, stderr)
	case "version":
		fmt.Fprintf(stdout, "masterorder %s (commit %s, built %s)\n", version, commit, buildDate)
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "unknown command %q\n\n%s", cmd, usage)
		return 2
	}
	return exitCode(err, stderr)
}

// usageError is a bad command line (exit 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "masterorder:", err)
	var ce *node.ConfigError
	var ue usageError
	if errors.As(err, &ce) || errors.As(err, &ue) || errors.Is(err, flag.ErrHelp) {
		return 2
	}
	return 1
}

// newLogger writes JSON when stdout is not a terminal (journald), text
// otherwise.
func newLogger(cfg node.LogConfig, w io.Writer) *slog.Logger {
	level := slog.LevelInfo
	switch cfg.Level {
	case "debug":
		level = slog.LevelDebug
	case "warn":
		level = slog.LevelWarn
	case "error":
		level = slog.LevelError
	}
	opts := &slog.HandlerOptions{Level: level}
	format := cfg.Format
	if format == "" {
		format = "json"
		if f, ok := w.(*os.File); ok {
			if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
				format = "text"
			}
		}
	}
	if format == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}
