package main

import (
	"flag"
	"io"
	"os"
	"time"

	"masterorder/node/restart"
	"masterorder/orders"
	"masterorder/setup"
)

// cmdStopped is the unit's ExecStopPost: it records how the run ended as
// systemd tells it ($SERVICE_RESULT, $EXIT_CODE, $EXIT_STATUS) in the
// data directory `run` used, for the next start to report (node/restart).
func cmdStopped(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("stopped", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", "", "the node config `run` was given; empty: the box layout's, or its state dir in setup mode")
	box := setup.BoxLayout()
	fs.StringVar(&box.EtcDir, "etc-dir", box.EtcDir, "box layout: config (without --config)")
	fs.StringVar(&box.StateDir, "state-dir", box.StateDir, "box layout: store data (without --config)")
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	dir := box.DataDir()
	if *path == "" && box.ModeOf() == setup.ModeMember {
		*path = box.ConfigPath()
	}
	if *path != "" {
		cfg, err := orders.LoadConfig(*path)
		if err != nil {
			return err
		}
		dir = cfg.DataDir
	}
	return restart.RecordSystemdStop(dir, time.Now(), os.Getenv)
}
