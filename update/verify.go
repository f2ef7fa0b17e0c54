package update

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Bundle is what RAUC read from a bundle whose signature it verified.
type Bundle struct {
	Path       string `json:"-"`
	Version    string `json:"version"`
	Compatible string `json:"compatible"`
	Size       int64  `json:"size"`
	SHA256     string `json:"sha256,omitempty"`
}

// Expect is what a bundle must be for this box.
type Expect struct {
	Keyring    string // the certificate its signature must chain to
	Compatible string // this board
	Running    string // the version this box runs
	// AllowDowngrade is the owner's confirmation that an older version
	// is wanted.
	AllowDowngrade bool
}

// Refusal is a bundle or an update refused, with its reason code
// (httpapi's table) and the specifics for an engineer.
type Refusal struct {
	Code   string
	Detail string
}

func (r *Refusal) Error() string { return r.Code + ": " + r.Detail }

func refuse(code, format string, args ...any) *Refusal {
	return &Refusal{Code: code, Detail: fmt.Sprintf(format, args...)}
}

// Reason codes of a refused bundle.
const (
	CodeUnsigned   = "BUNDLE_UNSIGNED"    // no signature at all
	CodeWrongKey   = "BUNDLE_WRONG_KEY"   // signed, but not by the store's release key
	CodeCorrupt    = "BUNDLE_CORRUPT"     // not a bundle, cut short or damaged
	CodeWrongBoard = "BUNDLE_WRONG_BOARD" // made for another board
	CodeDowngrade  = "BUNDLE_DOWNGRADE"   // older than this box runs; needs the owner's confirmation
	CodeCurrent    = "UPDATE_ALREADY_CURRENT"
)

// Verify has RAUC check the bundle at path (`rauc info --keyring`: the
// signature over the manifest, which holds the payload's hash), then
// checks it is for this board and not older than what this box runs.
// Every refusal is a *Refusal.
func Verify(ctx context.Context, path string, e Expect) (Bundle, error) {
	st, err := os.Stat(path)
	if err != nil {
		return Bundle{}, fmt.Errorf("bundle: %w", err)
	}
	if err := checkContainer(path, st.Size()); err != nil {
		return Bundle{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "rauc", "info", "--keyring="+e.Keyring, "--output-format=json", path)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// RAUC must not find a system.conf of a box it does not run on (a
	// lab machine): info needs only the keyring.
	cmd.Env = append(os.Environ(), "LANG=C", "LC_ALL=C")
	if err := cmd.Run(); err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return Bundle{}, fmt.Errorf("bundle: rauc is not installed: %w", err)
		}
		msg := strings.TrimSpace(stderr.String())
		switch {
		case strings.Contains(msg, "Signature size is 0"):
			return Bundle{}, refuse(CodeUnsigned, "rauc: %s", lastLine(msg))
		case strings.Contains(msg, "signature verification failed"), strings.Contains(msg, "Verify error"):
			return Bundle{}, refuse(CodeWrongKey, "rauc: %s", lastLine(msg))
		default:
			return Bundle{}, refuse(CodeCorrupt, "rauc: %s", lastLine(msg))
		}
	}
	var info struct {
		Compatible string `json:"compatible"`
		Version    string `json:"version"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &info); err != nil {
		return Bundle{}, refuse(CodeCorrupt, "rauc info: %v", err)
	}
	b := Bundle{Path: path, Version: info.Version, Compatible: info.Compatible, Size: st.Size()}
	if info.Compatible != e.Compatible {
		return b, refuse(CodeWrongBoard, "bundle for %q, this box is %q", info.Compatible, e.Compatible)
	}
	if c, ok := Compare(info.Version, e.Running); ok {
		switch {
		case c == 0:
			return b, refuse(CodeCurrent, "this box already runs %s", e.Running)
		case c < 0 && !e.AllowDowngrade:
			return b, refuse(CodeDowngrade, "bundle %s is older than %s", info.Version, e.Running)
		}
	} else if info.Version == e.Running {
		return b, refuse(CodeCurrent, "this box already runs %s", e.Running)
	}
	return b, nil
}

// checkContainer reads the squashfs superblock RAUC's bundle starts
// with: a file that is not one, or shorter than the image it declares
// (a download or copy cut short), is corrupt before RAUC is asked.
func checkContainer(path string, size int64) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var sb [48]byte
	if _, err := io.ReadFull(f, sb[:]); err != nil || string(sb[:4]) != "hsqs" {
		return refuse(CodeCorrupt, "not a RAUC bundle (no squashfs image at its start)")
	}
	if used := int64(binary.LittleEndian.Uint64(sb[40:48])); used > size {
		return refuse(CodeCorrupt, "cut short: %d bytes of a %d-byte image", size, used)
	}
	return nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
