// Package update brings a new version of MasterOrder (and of the system
// around it) to every box of a store, one box at a time, from one tap on
// the console.
//
// By concern:
//
//	version.go    comparing release versions
//	verify.go     a bundle checked by RAUC (signature, keyring), and for
//	              this board and version: Verify
//	installer.go  the Installer: RAUC's slots, or the "slots" launcher
//	              that stands in for the boot loader in tests and labs
//	state.go      this box's update state, kept across restarts
//	box.go        one box: install on the leader's request, trial after
//	              the restart, commit when healthy, fall back when not
//	staging.go    the bundle the manager offers: uploaded from the
//	              tablet or downloaded from the release index
//	rollout.go    the leader's rolling update (followers first, then
//	              leadership handed over), its record in the KV
//	http.go       the console's calls and the internal channel's
package update
