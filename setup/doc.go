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
// It runs before there is a node, so it imports nothing of a running
// member (node's server, orders): only setup/cluster, the one writer,
// knows their configuration types (imports_test.go holds this). A
// running member's side of setup, the console's add and replace, is
// package setup/join.
//
// The pieces, by file:
//
//   - identity.go: box id, short code, setup key
//   - window.go: claim window; code.go: setup code
//   - device.go: hostname, model, serial, identify LED
//   - announce.go and browse.go: DNS-SD
//   - find.go: listing boxes (mDNS and probe addresses) as Candidates
//   - claim.go: the claim channel, both sides
//   - state.go: box layout, claimed marker, factory reset
//   - listener.go: plain HTTP and TLS on one port
//   - box.go: the setup-mode server
//   - wizard.go: the wizard's calls; wizard_create.go: its form;
//     wizard_forming.go: claim, make the cluster, push;
//     wizard_following.go: until every box is ready
//   - progress.go: what the wizard's page and the console follow (Job,
//     Reason, the wizard's Progress)
//   - member.go: what a member answers on setup's paths
//   - ca.go: the cluster CA for tablets (/ca, /ca.crt, /ca.mobileconfig)
package setup
