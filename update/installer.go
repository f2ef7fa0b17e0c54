package update

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"masterorder/node/atomicfile"
)

// Installer puts a verified bundle on the box and switches to it. The
// image's is RAUC with two system slots and the boot loader's fallback;
// the "slots" one restarts the process into the other slot's binary
// through a launcher that plays the boot loader (tests and labs).
type Installer interface {
	// Install writes the bundle into the slot this box does not run and
	// marks that slot to be tried at the next start.
	Install(ctx context.Context, bundle string) error
	// Reboot starts the box again, into the slot to try.
	Reboot() error
	// Commit keeps the running slot for good (it came up healthy).
	Commit() error
	// Fallback gives the running slot up (it never became healthy) and
	// starts the old one.
	Fallback() error
}

// NewInstaller is the installer cfg names; restart ends this process
// (the "slots" launcher then starts the slot to try).
func NewInstaller(installer, keyring, slotsFile string, restart func()) Installer {
	if installer == "slots" {
		return &SlotsInstaller{File: slotsFile, Keyring: keyring, Restart: restart}
	}
	return raucInstaller{rebootFile: RebootRequestFile}
}

// RebootRequestFile is where the image's masterorder-reboot.path looks:
// MasterOrder runs unprivileged and the image has no polkit, so it asks
// for the box's restart by making this file (docs/packaging.md).
const RebootRequestFile = "/var/lib/masterorder/reboot-requested"

// requestReboot makes the file the image's path unit restarts the box for.
func requestReboot(file, why string) error {
	if err := os.WriteFile(file, []byte(why+"\n"), 0o644); err != nil {
		return fmt.Errorf("ask for a restart: %w", err)
	}
	return nil
}

// raucInstaller is the image's: RAUC writes the other slot and sets the
// boot loader to try it once; `rauc status mark-good` commits it, and a
// slot never marked good is left by the boot loader at the next boot.
type raucInstaller struct{ rebootFile string }

func (raucInstaller) Install(ctx context.Context, bundle string) error {
	return runTool(ctx, "rauc", "install", bundle)
}
func (r raucInstaller) Reboot() error { return requestReboot(r.rebootFile, "update installed") }
func (raucInstaller) Commit() error {
	return runTool(context.Background(), "rauc", "status", "mark-good")
}
func (r raucInstaller) Fallback() error {
	if err := runTool(context.Background(), "rauc", "status", "mark-bad"); err != nil {
		return err
	}
	return requestReboot(r.rebootFile, "update not healthy: back to the old slot")
}

func runTool(ctx context.Context, name string, args ...string) error {
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, lastLine(out.String()))
	}
	return nil
}

// BootFile is the "slots" installer's boot state, shared with the
// launcher that plays the boot loader: it starts Try once if set
// (clearing it first, like the Pi firmware's tryboot), else Default, and
// records which one it started in Booted.
type BootFile struct {
	Slots   map[string]string `json:"slots"` // slot name → binary
	Default string            `json:"default"`
	Try     string            `json:"try,omitempty"`
	Booted  string            `json:"booted"`
}

// ReadBootFile reads the boot state at path.
func ReadBootFile(path string) (BootFile, error) {
	var bf BootFile
	b, err := os.ReadFile(path)
	if err != nil {
		return bf, err
	}
	if err := json.Unmarshal(b, &bf); err != nil {
		return bf, fmt.Errorf("boot file %s: %w", path, err)
	}
	return bf, nil
}

// WriteBootFile writes the boot state at path, atomically.
func WriteBootFile(path string, bf BootFile) error {
	b, err := json.MarshalIndent(bf, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, b, 0o644)
}

// SlotsInstaller installs the bundle's binary (its image named
// "masterorder") into the other slot of a BootFile.
type SlotsInstaller struct {
	File    string
	Keyring string
	Restart func()
}

func (s *SlotsInstaller) Install(ctx context.Context, bundle string) error {
	bf, err := ReadBootFile(s.File)
	if err != nil {
		return err
	}
	other := ""
	for name := range bf.Slots {
		if name != bf.Booted && (other == "" || name < other) {
			other = name
		}
	}
	if other == "" {
		return fmt.Errorf("boot file %s: no slot besides %q", s.File, bf.Booted)
	}
	target := bf.Slots[other]
	tmp, err := os.MkdirTemp(filepath.Dir(target), ".extract-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	out := filepath.Join(tmp, "content")
	// rauc extract checks the signature and the payload once more.
	if err := runTool(ctx, "rauc", "extract", "--keyring="+s.Keyring, bundle, out); err != nil {
		return err
	}
	if err := copyFile(filepath.Join(out, "masterorder"), target+".new", 0o755); err != nil {
		return err
	}
	if err := os.Rename(target+".new", target); err != nil {
		return err
	}
	bf.Try = other
	return WriteBootFile(s.File, bf)
}

func (s *SlotsInstaller) Reboot() error { s.Restart(); return nil }

func (s *SlotsInstaller) Commit() error {
	bf, err := ReadBootFile(s.File)
	if err != nil {
		return err
	}
	bf.Default, bf.Try = bf.Booted, ""
	return WriteBootFile(s.File, bf)
}

func (s *SlotsInstaller) Fallback() error {
	bf, err := ReadBootFile(s.File)
	if err != nil {
		return err
	}
	bf.Try = ""
	if err := WriteBootFile(s.File, bf); err != nil {
		return err
	}
	s.Restart()
	return nil
}

func copyFile(from, to string, mode os.FileMode) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
