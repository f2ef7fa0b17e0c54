package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/pelletier/go-toml/v2"

	"masterorder/orders"
	"masterorder/orders/staffauth"
)

// rotate-secrets gives every box config in DIR a new cluster secret and
// a new token secret: after the boxes restart with them, every staff and
// kitchen token and every guest session credential issued before is
// void, and a removed box's copy of the old secrets opens nothing.
// All boxes must restart with the new configs together (the internal
// channel needs the same secret on both ends).
var rotateSecretsCommand = command{
	name:  "rotate-secrets",
	usage: "masterorder rotate-secrets --out DIR   (new cluster and token secrets; restart every box)\n",
	run:   rotateSecrets,
}

func rotateSecrets(_ context.Context, args []string, e env) error {
	fs := e.flags("rotate-secrets")
	out := fs.String("out", "", "the directory init wrote (every *.toml in it is rewritten)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *out == "" {
		return badUsage("rotate-secrets needs --out (the directory init wrote)")
	}
	paths, err := filepath.Glob(filepath.Join(*out, "*.toml"))
	if err != nil {
		return usageError{err}
	}
	clusterSecret, tokenSecret := staffauth.NewSecret(), staffauth.NewSecret()
	type box struct {
		path string
		raw  []byte
	}
	var boxes []box
	for _, p := range paths {
		if _, err := orders.LoadConfig(p); err != nil {
			continue // not a box config
		}
		m := map[string]any{}
		raw, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := toml.Unmarshal(raw, &m); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		m["cluster_secret"] = clusterSecret
		staff, _ := m["staff"].(map[string]any)
		if staff == nil {
			staff = map[string]any{}
		}
		staff["token_secret"] = tokenSecret
		m["staff"] = staff
		b, err := toml.Marshal(m)
		if err != nil {
			return err
		}
		boxes = append(boxes, box{p, b})
	}
	if len(boxes) == 0 {
		return badUsage("rotate-secrets: no box config in " + *out)
	}
	// Write all or nothing: a half-rotated store cannot forward writes.
	for _, b := range boxes {
		if err := os.WriteFile(b.path+".new", b.raw, 0o600); err != nil {
			return err
		}
		if _, err := orders.LoadConfig(b.path + ".new"); err != nil {
			os.Remove(b.path + ".new")
			return fmt.Errorf("rotated config %s does not load: %w", b.path, err)
		}
	}
	for _, b := range boxes {
		if err := os.Rename(b.path+".new", b.path); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "  %s\n", b.path)
	}
	fmt.Fprintf(e.stdout, "rotated the cluster and token secrets in %d configs: copy them to the boxes and restart all of them; every login must be made again\n", len(boxes))
	return nil
}
