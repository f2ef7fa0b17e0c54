package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"masterorder/node"
	"masterorder/orders"
)

func cmdRestore(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("restore", flag.ContinueOnError)
	fs.SetOutput(stderr)
	in := fs.String("in", "", "backup file (masterorder backup --out)")
	path := fs.String("config", "", "the config of the node to seed (its data_dir must be fresh)")
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	if *in == "" || *path == "" {
		return usageError{"restore needs --in and --config"}
	}
	cfg, err := node.LoadConfig(*path)
	if err != nil {
		return err
	}
	f, err := os.Open(*in)
	if err != nil {
		return usageError{"--in: " + err.Error()}
	}
	defer f.Close()
	opts := orders.NodeOptions()
	opts.Logger = newLogger(node.LogConfig{Level: "warn"}, stderr)
	info, err := node.RestoreBackup(cfg, opts, f)
	if err != nil {
		return fmt.Errorf("restore into %s: %w", cfg.DataDir, err)
	}
	fmt.Fprintf(stdout, "restored %d bytes at index %d into %s; members %s\n", info.Bytes, info.Index, cfg.DataDir, strings.Join(info.Members, ", "))
	fmt.Fprintf(stdout, "start it with: masterorder run --config %s\n", *path)
	return nil
}
