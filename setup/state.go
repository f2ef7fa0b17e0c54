package setup

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"masterorder/node/atomicfile"
	"masterorder/setup/cluster"
)

// Layout is where a box keeps things (docs/packaging.md, "The Debian
// package"): /etc/masterorder for the config and TLS files,
// /var/lib/masterorder for data and setup's own identity, the card's
// boot partition for the owner's setup code and the factory-reset file.
type Layout struct {
	EtcDir   string // masterorder.toml, tls/, setup-code
	StateDir string // the store's data; setup/ holds the setup identity
	BootDir  string // masterorder-setup.txt, masterorder-factory-reset
	SysRoot  string // "/" on a box: /proc/device-tree, /sys/class/leds, /proc/uptime
}

// BoxLayout is the layout of a real box.
func BoxLayout() Layout {
	return Layout{EtcDir: "/etc/masterorder", StateDir: "/var/lib/masterorder", BootDir: "/boot/firmware", SysRoot: "/"}
}

// ConfigPath is the member config `masterorder run` reads by default.
func (l Layout) ConfigPath() string { return filepath.Join(l.EtcDir, "masterorder.toml") }

// TLSDir holds the cluster CA and this box's certificates.
func (l Layout) TLSDir() string { return filepath.Join(l.EtcDir, "tls") }

// DataDir is the store's data directory.
func (l Layout) DataDir() string { return l.StateDir }

// SetupDir holds the setup identity and the claimed marker.
func (l Layout) SetupDir() string { return filepath.Join(l.StateDir, "setup") }

func (l Layout) claimedFile() string { return filepath.Join(l.SetupDir(), "claimed.json") }

// Mode is what a box is.
type Mode string

const (
	ModeSetup   Mode = "setup"   // no config: waiting to be claimed
	ModeClaimed Mode = "claimed" // claimed, waiting for its config from the claimer
	ModeMember  Mode = "member"  // has a config: a store box
)

// ModeOf tells the box's mode from its files: a config makes a member; a
// claimed marker keeps a box that was claimed (but not yet configured)
// out of setup mode until a factory reset.
func (l Layout) ModeOf() Mode {
	if _, err := os.Stat(l.ConfigPath()); err == nil {
		return ModeMember
	}
	if _, err := os.Stat(l.claimedFile()); err == nil {
		return ModeClaimed
	}
	return ModeSetup
}

// claim is the persisted claimed marker.
type claim struct {
	Claimer string    `json:"claimer"` // the claiming box's id
	Token   string    `json:"token"`   // authorises the config push
	At      time.Time `json:"at"`
}

func (l Layout) readClaim() (claim, bool) {
	b, err := os.ReadFile(l.claimedFile())
	if err != nil {
		return claim{}, false
	}
	var c claim
	if json.Unmarshal(b, &c) != nil || c.Token == "" {
		return claim{}, false
	}
	return c, true
}

func (l Layout) writeClaim(c claim) error {
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	if err := atomicfile.MkdirAll(l.SetupDir(), 0o700); err != nil {
		return err
	}
	return atomicfile.WriteFile(l.claimedFile(), b, 0o600)
}

func (l Layout) dropClaim() error {
	err := os.Remove(l.claimedFile())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// FactoryResetFile on the boot partition resets the box at its next start.
const FactoryResetFile = "masterorder-factory-reset"

// FactoryReset returns the box to blank: its config, TLS files, store
// data and setup identity (a new box id and key) are removed. The
// owner's setup code stays. It needs physical access: `masterorder reset
// --yes` on the box, or the reset file on the card's boot partition.
func FactoryReset(l Layout) error {
	var errs []error
	rm := func(p string) {
		if err := os.RemoveAll(p); err != nil {
			errs = append(errs, err)
		}
	}
	rm(l.ConfigPath())
	rm(l.TLSDir())
	if entries, err := os.ReadDir(l.StateDir); err == nil {
		for _, e := range entries {
			rm(filepath.Join(l.StateDir, e.Name()))
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// BootReset performs a factory reset when the reset file is on the boot
// partition, then removes the file (so it resets once). It reports
// whether it reset.
func BootReset(l Layout) (bool, error) {
	if l.BootDir == "" {
		return false, nil
	}
	p := filepath.Join(l.BootDir, FactoryResetFile)
	if _, err := os.Stat(p); err != nil {
		return false, nil
	}
	if err := FactoryReset(l); err != nil {
		return false, fmt.Errorf("factory reset: %w", err)
	}
	if err := os.Remove(p); err != nil {
		return true, fmt.Errorf("factory reset done, but %s stays (it would reset again at the next start): %w", p, err)
	}
	return true, nil
}

// writeConfigured writes a pushed bundle to the layout: TLS files first,
// the config last (its presence is what makes the box a member).
func (l Layout) writeConfigured(b cluster.Bundle) (string, error) {
	if err := b.WriteTLS(l.TLSDir()); err != nil {
		return "", err
	}
	c := b.Config
	c.UseLayout(l.TLSDir(), l.DataDir())
	raw, err := c.Marshal("# masterorder box " + c.NodeID + " — written by the setup wizard (package setup), as `masterorder init` writes it.\n")
	if err != nil {
		return "", err
	}
	if err := atomicfile.MkdirAll(l.EtcDir, 0o750); err != nil {
		return "", err
	}
	if err := atomicfile.MkdirAll(l.DataDir(), 0o750); err != nil {
		return "", err
	}
	if err := atomicfile.WriteFile(l.ConfigPath(), raw, 0o600); err != nil {
		return "", err
	}
	return l.ConfigPath(), nil
}
