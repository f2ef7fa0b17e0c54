package main

import (
	"bufio"
	"bytes"
	"context"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// unitDirectives reads a systemd unit: section → key → values in order
// (a key may repeat). Comments and blank lines are skipped.
func unitDirectives(t *testing.T, name string, raw []byte) map[string]map[string][]string {
	t.Helper()
	out := map[string]map[string][]string{}
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = strings.Trim(line, "[]")
			out[section] = map[string][]string{}
		case strings.HasSuffix(line, `\`):
			t.Fatalf("%s:%d: a continued line; this reader does not join them", name, n)
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				t.Fatalf("%s:%d: not a directive: %q", name, n, line)
			}
			k = strings.TrimSpace(k)
			out[section][k] = append(out[section][k], strings.Join(strings.Fields(v), " "))
		}
	}
	return out
}

// TestInitUnitMatchesPackagedUnit: the unit `init --systemd` writes and
// the one the Debian package installs (build/deb/masterorder.service)
// run the same binary the same way: every directive is the same but the
// per-box ones listed here, so a sandboxing, limit or restart change to
// one of them that misses the other fails.
func TestInitUnitMatchesPackagedUnit(t *testing.T) {
	pkgPath := filepath.Join("build", "deb", "masterorder.service")
	pkgRaw, err := os.ReadFile(pkgPath)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if code, out, errs := runCLI(t, "init", "--shop-id", "ramen", "--nodes", "a=192.168.1.10:8080:9080", "--out", dir,
		"--systemd", "--staff-password", "a-long-password"); code != 0 {
		t.Fatalf("init --systemd: %d %s %s", code, out, errs)
	}
	initPath := filepath.Join(dir, "masterorder-a.service")
	initRaw, err := os.ReadFile(initPath)
	if err != nil {
		t.Fatal(err)
	}
	pkg, gen := unitDirectives(t, pkgPath, pkgRaw), unitDirectives(t, initPath, initRaw)

	// What is per box, as init writes it (nil: init writes none).
	perBox := map[string]map[string][]string{
		"Unit": {
			"Description":   {"MasterOrder store node a"},
			"Documentation": nil, // a man page and docs only the package installs
		},
		"Service": {
			"ExecStart":        {boxBinary + " run --config " + boxEtc + "/a.toml"},
			"ExecStopPost":     {"-" + boxBinary + " stopped --config " + boxEtc + "/a.toml"},
			"SyslogIdentifier": {"masterorder-a"},
			// Only setup mode writes /etc/masterorder and the LED; a
			// node run with --config never enters it (writeSystemdUnit).
			"ReadWritePaths": nil,
		},
	}
	for _, sec := range []string{"Unit", "Service", "Install"} {
		if pkg[sec] == nil || gen[sec] == nil {
			t.Fatalf("[%s]: in the packaged unit %v, in init's %v", sec, pkg[sec] != nil, gen[sec] != nil)
		}
	}
	if got := slices.Sorted(maps.Keys(gen)); !slices.Equal(got, slices.Sorted(maps.Keys(pkg))) {
		t.Errorf("sections: init writes %v, the package %v", got, slices.Sorted(maps.Keys(pkg)))
	}
	for sec, want := range pkg {
		keys := slices.Sorted(maps.Keys(want))
		for k := range gen[sec] {
			if _, ok := want[k]; !ok {
				keys = append(keys, k)
			}
		}
		for _, k := range keys {
			w := want[k]
			if pb, ok := perBox[sec][k]; ok {
				w = pb
			}
			if got := gen[sec][k]; !slices.Equal(got, w) {
				t.Errorf("[%s] %s: init --systemd writes %q, want %q (as %s has it, unless per box)", sec, k, got, w, pkgPath)
			}
		}
	}
	// Both run the same command; init's adds only the box's config.
	pkgExec, genExec := strings.Fields(strings.Join(pkg["Service"]["ExecStart"], "")), strings.Fields(boxBinary+" run --config x")
	if len(pkgExec) == 0 || filepath.Base(pkgExec[0]) != filepath.Base(genExec[0]) || !slices.Equal(pkgExec[1:], genExec[1:len(genExec)-2]) {
		t.Errorf("the packaged ExecStart %q is no longer init's %q without --config", pkgExec, genExec)
	}
	// Both record how the run ended, with the binary that ran it.
	if want := "-" + pkgExec[0] + " stopped"; !slices.Equal(pkg["Service"]["ExecStopPost"], []string{want}) {
		t.Errorf("the packaged ExecStopPost is %q, want %q", pkg["Service"]["ExecStopPost"], want)
	}

	t.Run("systemd-analyze verify", func(t *testing.T) {
		analyze, err := exec.LookPath("systemd-analyze")
		if err != nil {
			t.Skip("no systemd-analyze")
		}
		// verify wants ExecStart's program to exist; the test binary
		// stands in for masterorder.
		self, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		vdir := t.TempDir()
		for name, raw := range map[string][]byte{"masterorder-a.service": initRaw, "masterorder.service": pkgRaw} {
			var b strings.Builder
			for _, line := range strings.SplitAfter(string(raw), "\n") {
				if rest, ok := strings.CutPrefix(line, "ExecStart="); ok {
					_, args, _ := strings.Cut(rest, " ")
					line = "ExecStart=" + self + " " + args
				}
				b.WriteString(line)
			}
			p := filepath.Join(vdir, name)
			if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			out, err := exec.CommandContext(ctx, analyze, "verify", "--man=no", p).CombinedOutput()
			cancel()
			// It exits 0 on an unknown key or a bad value too, but says so.
			if err != nil || len(bytes.TrimSpace(out)) > 0 {
				t.Errorf("systemd-analyze verify %s: %v\n%s", name, err, out)
			}
		}
	})
}
