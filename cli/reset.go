package cli

import (
	"context"
	"fmt"

	"masterorder/setup"
)

// reset is the factory reset on the box: config, certificates, data and
// the setup identity go; the box starts in setup mode next time.
var resetCommand = command{
	name:  "reset",
	usage: "masterorder reset --yes [--etc-dir DIR] [--state-dir DIR]   (factory reset, on the box: setup mode next time)\n",
	run:   reset,
}

func reset(_ context.Context, args []string, e env) error {
	fs := e.flags("reset")
	yes := fs.Bool("yes", false, "really erase this box's store data and configuration")
	box := setup.BoxLayout()
	fs.StringVar(&box.EtcDir, "etc-dir", box.EtcDir, "box layout: config and tls/")
	fs.StringVar(&box.StateDir, "state-dir", box.StateDir, "box layout: store data and setup/ identity")
	if err := parse(fs, args); err != nil {
		return err
	}
	if !*yes {
		return badUsage("reset erases this box's orders, configuration and certificates; run it on the box (stopped) with --yes")
	}
	if err := setup.FactoryReset(box); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "factory reset: %s and %s cleared; the box starts in setup mode (restart it: systemctl restart masterorder)\n", box.ConfigPath(), box.StateDir)
	return nil
}
