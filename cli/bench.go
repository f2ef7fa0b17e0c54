package cli

import (
	"context"

	"masterorder/bench"
)

// bench: lunch-peak load against a store, and the closed loop beside
// etcd. Its flags and help are the bench package's own.
var benchCommand = command{
	name:  "bench",
	usage: "masterorder bench --url URL[,URL...] [flags]   (masterorder bench -h)\n",
	run: func(ctx context.Context, args []string, e env) error {
		if code := bench.Main(ctx, args, e.stdout, e.stderr); code != 0 {
			return exitStatus(code)
		}
		return nil
	},
}
