package setup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// Where the owner may put a setup code: on the card's boot partition
// (writable from any laptop before the first boot) or in the box's etc.
const (
	BootSetupFile = "masterorder-setup.txt"
	EtcSetupCode  = "setup-code"
)

// ReadSetupCode returns the owner's setup code: `setup_code = "..."` in
// bootDir/masterorder-setup.txt, else the first line of
// etcDir/setup-code; "" when neither is set (any claim in the window is
// accepted).
func ReadSetupCode(bootDir, etcDir string) (string, error) {
	if bootDir != "" {
		b, err := os.ReadFile(filepath.Join(bootDir, BootSetupFile))
		switch {
		case err == nil:
			var f struct {
				SetupCode string `toml:"setup_code"`
			}
			if err := toml.Unmarshal(b, &f); err != nil {
				return "", fmt.Errorf("%s: %w", filepath.Join(bootDir, BootSetupFile), err)
			}
			if c := strings.TrimSpace(f.SetupCode); c != "" {
				return c, nil
			}
		case !errors.Is(err, os.ErrNotExist):
			return "", err
		}
	}
	if etcDir != "" {
		b, err := os.ReadFile(filepath.Join(etcDir, EtcSetupCode))
		switch {
		case err == nil:
			line, _, _ := strings.Cut(string(b), "\n")
			return strings.TrimSpace(line), nil
		case !errors.Is(err, os.ErrNotExist):
			return "", err
		}
	}
	return "", nil
}
