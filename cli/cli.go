// Package cli is masterorder's command line: one file per command (run,
// demo, init, reset, status, members, backup, restore, rotate-secrets,
// bench), each with its usage beside its flags. This file is what they
// share: the command table, `masterorder help`, exit codes, flag parsing
// and the logger.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"masterorder/node"
)

// Build names the binary (package main has it from -ldflags).
type Build struct{ Version, Commit, Date string }

// env is what a command is given besides its arguments.
type env struct {
	stdout, stderr io.Writer
	build          Build
}

// A command is one word of the command line: its lines in `masterorder
// help` (continuation lines indented) and what it does.
type command struct {
	name  string
	usage string
	run   func(ctx context.Context, args []string, e env) error
}

// commands in the order `masterorder help` lists them.
var commands = []command{demoCommand, runCommand, resetCommand, stoppedCommand, initCommand, benchCommand, statusCommand,
	membersCommand, backupCommand, restoreCommand, rotateSecretsCommand}

// usage is `masterorder help`: every command's usage, then version and
// help (which Run answers itself).
func usage() string {
	var b strings.Builder
	b.WriteString("masterorder — store ordering appliance\n\nusage:\n")
	for _, c := range commands {
		indent(&b, c.usage)
	}
	indent(&b, "masterorder version\nmasterorder help\n")
	return b.String()
}

func indent(b *strings.Builder, text string) {
	for _, line := range strings.SplitAfter(text, "\n") {
		if line != "" {
			b.WriteString("  " + line)
		}
	}
}

// Run runs the command line args (without the program name) until the
// command ends or SIGINT/SIGTERM, and returns the exit status: 0 done, 2 a
// bad command line or config, 1 anything else.
func Run(args []string, build Build, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage())
		return 2
	}
	name, rest := args[0], args[1:]
	switch name {
	case "version":
		fmt.Fprintf(stdout, "masterorder %s (commit %s, built %s)\n", build.Version, build.Commit, build.Date)
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage())
		return 0
	}
	for _, c := range commands {
		if c.name == name {
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return exitCode(c.run(ctx, rest, env{stdout: stdout, stderr: stderr, build: build}), stderr)
		}
	}
	fmt.Fprintf(stderr, "unknown command %q\n\n%s", name, usage())
	return 2
}

// usageError is a bad command line (exit 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// badUsage is a bad command line in words.
func badUsage(msg string) error { return usageError{errors.New(msg)} }

// badFlag is a bad value of flag (named as typed: "--url").
func badFlag(flag string, err error) error { return usageError{fmt.Errorf("%s: %w", flag, err)} }

// exitStatus ends a command that has said why itself (bench) with this
// status.
type exitStatus int

func (s exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(s)) }

func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	var st exitStatus
	if errors.As(err, &st) {
		return int(st)
	}
	fmt.Fprintln(stderr, "masterorder:", err)
	var ce *node.ConfigError
	var ue usageError
	if errors.As(err, &ce) || errors.As(err, &ue) || errors.Is(err, flag.ErrHelp) {
		return 2
	}
	return 1
}

// flags is a command's flag set: its errors and -h go to stderr.
func (e env) flags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	return fs
}

// parse parses args; a bad one is a usage error.
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	return nil
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
