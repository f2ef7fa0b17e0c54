package cli

import (
	"context"
	"fmt"
	"os"
	"strings"

	"masterorder/node"
	"masterorder/orders"
)

// restore: seed a fresh box from a backup file.
var restoreCommand = command{
	name:  "restore",
	usage: "masterorder restore --in FILE --config node.toml\n",
	run:   restore,
}

func restore(_ context.Context, args []string, e env) error {
	fs := e.flags("restore")
	in := fs.String("in", "", "backup file (masterorder backup --out)")
	path := fs.String("config", "", "the config of the node to seed (its data_dir must be fresh)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *in == "" || *path == "" {
		return badUsage("restore needs --in and --config")
	}
	cfg, err := orders.LoadConfig(*path)
	if err != nil {
		return err
	}
	f, err := os.Open(*in)
	if err != nil {
		return badFlag("--in", err)
	}
	defer f.Close()
	opts := orders.NodeOptions()
	opts.Logger = newLogger(node.LogConfig{Level: "warn"}, e.stderr)
	info, err := node.RestoreBackup(cfg.NodeConfig, opts, f)
	if err != nil {
		return fmt.Errorf("restore into %s: %w", cfg.DataDir, err)
	}
	fmt.Fprintf(e.stdout, "restored %d bytes at index %d into %s; members %s\n", info.Bytes, info.Index, cfg.DataDir, strings.Join(info.Members, ", "))
	fmt.Fprintf(e.stdout, "start it with: masterorder run --config %s\n", *path)
	return nil
}
