// Package setup is a box's setup mode, with one job: discover, claim,
// configure. A box with no config announces itself on the LAN (mDNS /
// DNS-SD, _masterorder._tcp), serves the wizard at /setup/, and accepts
// being claimed only over TLS with its own setup key (whose fingerprint it
// announced), only in the window after power-on, and only with the setup
// code when the owner set one. A claimed box is pushed its config and
// certificates (made by package setup/cluster, as `masterorder init`
// makes them), writes them to the box layout and becomes a member in the
// same process.
//
// The pieces, by file: identity.go (box id, short code, setup key),
// window.go (claim window), code.go (setup code), device.go (hostname,
// model, serial, identify LED), announce.go and browse.go (DNS-SD),
// claim.go (the claim channel, both sides), state.go (claimed marker,
// factory reset), listener.go (plain HTTP and TLS on one port), box.go
// (the setup-mode server), ca.go (the cluster CA for tablets, and what a
// member serves for setup), find.go (listing boxes: mDNS and probe
// addresses), wizard.go (forming a
// cluster), join.go (adding or replacing a box of a running cluster).
package setup
