package setup

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Package setup runs on a box with no store yet: nothing it imports,
// directly or through another package, is a running member's (node's
// server, orders), except through the one writer, setup/cluster, which
// knows their configuration types. The member's side of setup lives in
// setup/join.
func TestImportsNoRunningMember(t *testing.T) {
	root := ".." // the module's root, from setup/
	seen := map[string]bool{}
	var walk func(pkg string, via []string)
	walk = func(pkg string, via []string) {
		if seen[pkg] {
			return
		}
		seen[pkg] = true
		dir := filepath.Join(root, strings.TrimPrefix(pkg, "masterorder/"))
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, e.Name()), nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, spec := range f.Imports {
				imp, _ := strconv.Unquote(spec.Path.Value)
				switch {
				case !strings.HasPrefix(imp, "masterorder/"), imp == "masterorder/setup/cluster":
				case imp == "masterorder/node" || imp == "masterorder/orders" || strings.HasPrefix(imp, "masterorder/orders/"):
					t.Errorf("%s imports %s", strings.Join(append(via, pkg+" ("+e.Name()+")"), " → "), imp)
				default:
					walk(imp, append(via, pkg))
				}
			}
		}
	}
	walk("masterorder/setup", nil)
}
