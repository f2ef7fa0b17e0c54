package setup

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Device is what the wizard shows to tell boxes apart.
type Device struct {
	Hostname string `json:"hostname"`
	Model    string `json:"model,omitempty"`
	Serial   string `json:"serial,omitempty"`
}

// ReadDevice reads the hostname and, where the machine has a device tree
// (a Raspberry Pi does), its model and serial number. sysRoot is "/" on
// a box.
func ReadDevice(sysRoot string) Device {
	d := Device{}
	d.Hostname, _ = os.Hostname()
	d.Model = dtString(filepath.Join(sysRoot, "proc/device-tree/model"))
	d.Serial = dtString(filepath.Join(sysRoot, "proc/device-tree/serial-number"))
	return d
}

// dtString reads a device-tree string (NUL-terminated).
func dtString(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(bytes.TrimRight(b, "\x00")))
}

// ledNames are a Raspberry Pi's activity LED, newer and older kernels.
var ledNames = []string{"ACT", "led0"}

// Identify blinks the box's activity LED for d, then gives the LED back
// to its usual trigger. Where there is no LED (or no permission) it does
// nothing and reports false: harmless.
func Identify(ctx context.Context, sysRoot string, d time.Duration) bool {
	var dir string
	for _, n := range ledNames {
		p := filepath.Join(sysRoot, "sys/class/leds", n)
		if _, err := os.Stat(filepath.Join(p, "brightness")); err == nil {
			dir = p
			break
		}
	}
	if dir == "" {
		return false
	}
	trigger := currentTrigger(filepath.Join(dir, "trigger"))
	if os.WriteFile(filepath.Join(dir, "trigger"), []byte("none"), 0o644) != nil {
		return false
	}
	go func() {
		defer os.WriteFile(filepath.Join(dir, "trigger"), []byte(trigger), 0o644)
		end := time.Now().Add(d)
		on := false
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for time.Now().Before(end) {
			on = !on
			v := "0"
			if on {
				v = "1"
			}
			os.WriteFile(filepath.Join(dir, "brightness"), []byte(v), 0o644)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return true
}

// currentTrigger reads the bracketed trigger of a LED ("none [mmc0] ...").
func currentTrigger(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "mmc0"
	}
	s := string(b)
	if i := strings.IndexByte(s, '['); i >= 0 {
		if j := strings.IndexByte(s[i:], ']'); j > 0 {
			return s[i+1 : i+j]
		}
	}
	if f := strings.Fields(s); len(f) > 0 {
		return f[0]
	}
	return "mmc0"
}
