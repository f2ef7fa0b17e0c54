package node

import (
	"net/url"
	"time"
)

// UpdateConfig is [update]: where new versions come from and how a box
// installs one (package update; docs/operations.md "Updating the store").
type UpdateConfig struct {
	// ReleaseIndexURL is the release index (a small JSON: version,
	// compatible, url, sha256, size) the console reads on the manager's
	// tap; empty: bundles come only from a file picked on the tablet.
	ReleaseIndexURL string `toml:"release_index_url"`
	// Keyring is the certificate a bundle's signature must chain to.
	Keyring string `toml:"keyring"`
	// Compatible is this board's RAUC compatible string; a bundle for
	// another board is refused.
	Compatible string `toml:"compatible"`
	// Installer is "rauc" (the image: rauc install into the other slot,
	// reboot, rauc status mark-good) or "slots" (a launcher that restarts
	// the process into the other slot's binary: tests and labs).
	Installer string `toml:"installer"`
	// SlotsFile is the "slots" installer's boot file, shared with its
	// launcher (which binary is booted, which one is tried once).
	SlotsFile string `toml:"slots_file"`
	// BoxTimeout bounds how long the leader waits for an updated box to
	// be back, in the cluster and caught up; TrialTimeout how long a box
	// on a new version may take to become healthy before it goes back
	// to its old version by itself.
	BoxTimeout   Duration `toml:"box_timeout"`
	TrialTimeout Duration `toml:"trial_timeout"`
	// MaxBundleMB bounds a bundle's size (upload and download).
	MaxBundleMB int64 `toml:"max_bundle_mb"`
}

func defaultUpdate() UpdateConfig {
	return UpdateConfig{Keyring: "/etc/rauc/keyring.pem", Compatible: "masterorder-rpi-arm64", Installer: "rauc",
		BoxTimeout: Duration{10 * time.Minute}, TrialTimeout: Duration{5 * time.Minute}, MaxBundleMB: 2048}
}

func (u UpdateConfig) validate() error {
	bad := func(setting, problem string) error {
		return &ConfigError{Setting: "update." + setting, Problem: problem}
	}
	if u.ReleaseIndexURL != "" {
		p, err := url.Parse(u.ReleaseIndexURL)
		if err != nil || (p.Scheme != "https" && p.Scheme != "http") || p.Host == "" {
			return bad("release_index_url", "must be an http(s) URL")
		}
	}
	switch u.Installer {
	case "rauc":
	case "slots":
		if u.SlotsFile == "" {
			return bad("slots_file", `is needed with installer = "slots"`)
		}
	default:
		return bad("installer", `must be "rauc" or "slots"`)
	}
	if u.Keyring == "" {
		return bad("keyring", "must name the update keyring")
	}
	if u.Compatible == "" {
		return bad("compatible", "must name this board")
	}
	if u.BoxTimeout.Duration < 10*time.Second || u.TrialTimeout.Duration < 10*time.Second {
		return bad("box_timeout", "box_timeout and trial_timeout must be at least 10s")
	}
	if u.MaxBundleMB < 1 {
		return bad("max_bundle_mb", "must be at least 1")
	}
	return nil
}
