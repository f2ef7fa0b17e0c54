package cli

import (
	"context"
	"os"
	"time"

	"masterorder/node/restart"
	"masterorder/orders"
	"masterorder/setup"
)

// stopped is the unit's ExecStopPost: it records how the run ended as
// systemd tells it ($SERVICE_RESULT, $EXIT_CODE, $EXIT_STATUS) in the
// data directory `run` used, for the next start to report (node/restart).
var stoppedCommand = command{
	name:  "stopped",
	usage: "masterorder stopped [--config node.toml] [--etc-dir DIR] [--state-dir DIR]   (the unit's ExecStopPost: records how the run ended)\n",
	run:   stopped,
}

func stopped(_ context.Context, args []string, e env) error {
	fs := e.flags("stopped")
	path := fs.String("config", "", "the node config `run` was given; empty: the box layout's, or its state dir in setup mode")
	box := setup.BoxLayout()
	fs.StringVar(&box.EtcDir, "etc-dir", box.EtcDir, "box layout: config (without --config)")
	fs.StringVar(&box.StateDir, "state-dir", box.StateDir, "box layout: store data (without --config)")
	if err := parse(fs, args); err != nil {
		return err
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
