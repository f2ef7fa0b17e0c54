// Command masterorder runs a restaurant's mobile ordering on the store
// LAN: one binary, one node of a three-box Raft cluster. The command line
// is package cli; this is its entry point.
package main

import (
	"os"

	"masterorder/cli"
)

// Set at build time: -ldflags "-X main.version=… -X main.commit=… -X main.buildDate=…".
var (
	version   = "dev"
	commit    = "unknown"
	buildDate = "unknown"
)

func main() {
	os.Exit(cli.Run(os.Args[1:], cli.Build{Version: version, Commit: commit, Date: buildDate}, os.Stdout, os.Stderr))
}
