package cli

import (
	"fmt"
	"os"
	"path/filepath"
)

// The layout `init --systemd` writes configs for.
const (
	// A binary copied by hand goes where the package manager never
	// writes (docs/operations.md, step 3). A box with the Debian package
	// has /usr/bin/masterorder and the package's own unit, which runs
	// /etc/masterorder/masterorder.toml: it needs no unit from init.
	boxBinary  = "/usr/local/bin/masterorder"
	boxEtc     = "/etc/masterorder"
	boxDataDir = "/var/lib/masterorder" // StateDirectory=masterorder
	boxUser    = "masterorder"
)

// writeSystemdUnit writes DIR/masterorder-<id>.service. Its [Service]
// section is the Debian package's unit (build/deb/masterorder.service)
// but for what is per box: ExecStart names the box's config,
// SyslogIdentifier the box, and there is no ReadWritePaths, because a
// node run with --config never enters setup mode, so it neither writes
// /etc/masterorder (only claiming a box does) nor blinks the LED (the
// wizard's identify button); /etc stays read-only for it.
// TestInitUnitMatchesPackagedUnit keeps the two in step.
func writeSystemdUnit(dir, id string) error {
	unit := fmt.Sprintf(`# MasterOrder store node %[1]s — written by masterorder init --systemd.
# Install on box %[1]s (see docs/operations.md, "A three-Pi store, start to finish"):
#   useradd --system --home-dir %[4]s --shell /usr/sbin/nologin %[5]s
#   install -m 0755 masterorder %[2]s
#   install -d -m 0750 -g %[5]s %[3]s %[3]s/tls
#   install -m 0640 -g %[5]s %[1]s.toml %[3]s/%[1]s.toml
#   install -m 0640 -g %[5]s tls/ca.pem tls/%[1]s.pem tls/%[1]s-key.pem tls/%[1]s-https*.pem %[3]s/tls/
#   install -m 0644 masterorder-%[1]s.service /etc/systemd/system/
#   systemctl daemon-reload && systemctl enable --now masterorder-%[1]s
# Logs: journalctl -u masterorder-%[1]s (JSON lines).
# A box with the Debian package installed needs no such unit: install
# %[1]s.toml as %[3]s/masterorder.toml and systemctl restart masterorder.

[Unit]
Description=MasterOrder store node %[1]s
Wants=network-online.target
After=network-online.target
# The box needs no internet and no correct clock: no time-sync dependency.
StartLimitIntervalSec=0

[Service]
# notify: the process says READY=1 once its HTTP answers (setup page or
# member), and feeds the watchdog every 10 s after a local GET /healthz
# (node/watchdog). A stopped, deadlocked or wedged process stops feeding
# and is aborted and restarted 30 s later. 30 s: a Pi 3B+ at a lunch peak
# answers that request in well under a second even through a GC pause or
# an SD card's fsync stall, so two checks may fail before systemd acts;
# shorter gains little, since the other two boxes take the orders
# (a new leader within about 2 s) while this one restarts.
Type=notify
WatchdogSec=30s
# A member's start waits for a peer's snapshot when it has no usable one
# of its own; past this it is restarted and asks again.
TimeoutStartSec=5min
# A watchdog abort (SIGABRT) or a panic dumps every goroutine to the
# journal and ends the process by the signal: Go's own exit status for
# both is 2, which RestartPreventExitStatus below would take for a bad
# config and never restart.
Environment=GOTRACEBACK=crash
User=%[5]s
Group=%[5]s
ExecStart=%[2]s run --config %[3]s/%[1]s.toml
# After every end of the process (a stop, the watchdog, a crash) its
# result ($SERVICE_RESULT, $EXIT_CODE, $EXIT_STATUS) is recorded in the
# state dir: the console's Boxes page tells why the box last restarted.
# "-": a failure here never fails the unit.
ExecStopPost=-%[2]s stopped --config %[3]s/%[1]s.toml
StateDirectory=masterorder
StateDirectoryMode=0750
WorkingDirectory=%[4]s
# SIGTERM stops the node cleanly; it stays a member of the cluster.
KillSignal=SIGTERM
TimeoutStopSec=30s
Restart=on-failure
RestartSec=2s
# Exit 2 is a bad config or command line: restarting will not fix it.
RestartPreventExitStatus=2
StandardOutput=journal
StandardError=journal
SyslogIdentifier=masterorder-%[1]s
LimitNOFILE=65536
NoNewPrivileges=yes
ProtectSystem=strict
ProtectHome=yes
PrivateTmp=yes
PrivateDevices=yes
ProtectKernelTunables=yes
ProtectKernelModules=yes
ProtectControlGroups=yes
# No ReadWritePaths: this node never writes %[3]s (only setup mode does).
# AF_NETLINK: Go lists network interfaces through netlink (mdns_name is
# answered on each of them).
RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX AF_NETLINK
# Ports below 1024 (80, 443) as a non-root user; CAP_SYS_TIME to move
# the clock forward (a box has no real-time clock: docs/operations.md "The
# clock"); the bounding set also takes every other capability away.
AmbientCapabilities=CAP_NET_BIND_SERVICE CAP_SYS_TIME
CapabilityBoundingSet=CAP_NET_BIND_SERVICE CAP_SYS_TIME

[Install]
WantedBy=multi-user.target
`, id, boxBinary, boxEtc, boxDataDir, boxUser)
	return os.WriteFile(filepath.Join(dir, "masterorder-"+id+".service"), []byte(unit), 0o644)
}
