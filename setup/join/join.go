// Package join adds a box in setup mode to a running cluster, or puts it
// in a dead member's place: what a member does when a manager taps "Add
// this box" or "Replace" in the console. Console serves the console's
// list of boxes in setup mode, the tap and the join's progress;
// AddToCluster is the sequence behind the tap (remove the dead member,
// claim and configure the box over the pinned channel, add it).
//
// It is the member's side of setup, apart from package setup (which
// runs on a box with no store yet) because it needs the running member:
// its node, its config and its CA key.
package join

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"

	"masterorder/node"
	"masterorder/node/pki"
	"masterorder/orders"
	"masterorder/setup"
	"masterorder/setup/cluster"
)

// Request asks a running member to take a box in setup mode into its
// cluster: as a new box, or as the replacement of a dead one.
type Request struct {
	// Config is the running member's own config and TLSDir its TLS
	// directory, which holds the cluster CA with its key (the wizard puts
	// it on every box it forms; init's boxes have none and cannot do this).
	Config orders.FileConfig
	TLSDir string
	// Target is the box in setup mode, as setup.Find listed it: its
	// address and the fingerprint to pin.
	Target setup.Found
	// Code is the target's setup code, when its owner set one.
	Code string
	// Members are the cluster's current members (node.Status().Nodes).
	Members []node.MemberStatus
	// Replaces is the id of the member the target replaces; "" adds a box.
	Replaces string
}

// Joined is the box that was pushed its config.
type Joined struct {
	NodeID string
	Peer   node.Peer // its raft, HTTP and HTTPS addresses
}

// configureTarget claims the target over the pinned TLS channel and
// pushes it the config and certificates init --add-node would write
// (join = true; the replaced box is left out of its peers); the target
// then starts as a member and waits to be added. The membership change
// is AddToCluster's.
func configureTarget(ctx context.Context, req Request) (Joined, error) {
	if req.Target.Fingerprint == "" || req.Target.Addr == "" {
		return Joined{}, errors.New("join: the target's address and announced fingerprint are needed")
	}
	ca, err := pki.LoadCAFiles(req.TLSDir)
	if err != nil {
		return Joined{}, fmt.Errorf("join: this box holds no cluster CA key to admit a box (%w)", err)
	}
	c := setup.NewClient(req.Target.Addr, req.Target.Fingerprint)
	defer c.CloseIdle()
	info, err := c.Info(ctx)
	if err != nil {
		return Joined{}, err
	}
	if info.State != setup.ModeSetup {
		return Joined{}, &setup.RefusedError{Status: 409, Code: "NOT_IN_SETUP", Message: "the box is " + string(info.State)}
	}
	token, err := c.Claim(ctx, req.Config.NodeID+"@"+req.Config.ShopID, req.Code)
	if err != nil {
		return Joined{}, err
	}
	host, _, err := net.SplitHostPort(req.Target.Addr)
	if err != nil {
		c.Release(ctx, token)
		return Joined{}, err
	}
	var current []node.Peer
	used := map[string]bool{req.Replaces: true}
	for _, p := range req.Config.Peers {
		used[p.ID] = true
	}
	for _, m := range req.Members {
		used[m.ID] = true
		if m.ID != req.Replaces {
			current = append(current, node.Peer{ID: m.ID, RaftAddr: m.RaftAddr, HTTPAddr: m.HTTPAddr, HTTPSAddr: m.HTTPSAddr})
		}
	}
	box := cluster.Box{ID: cluster.NextNodeID(used), Host: host, HTTPPort: strconv.Itoa(info.Ports.HTTP), RaftPort: strconv.Itoa(info.Ports.Raft),
		HTTPSPort: strconv.Itoa(info.Ports.HTTPS)}
	bundle, err := cluster.FromMember(req.Config, ca).AddBox(box, current, true)
	if err == nil {
		err = c.Configure(ctx, token, bundle)
	}
	if err != nil {
		c.Release(ctx, token)
		return Joined{}, err
	}
	self := bundle.Config.Peers[len(bundle.Config.Peers)-1]
	return Joined{NodeID: box.ID, Peer: self}, nil
}

// AddToCluster is the console's "add this box" / "replace X with this
// box" on member n: remove X first (the README's rule: remove before
// add, so a dead box never counts toward the quorum the new one needs),
// claim and configure the target, then add it as a voter; it catches up
// from a snapshot. req.Members is filled from n when empty.
func AddToCluster(ctx context.Context, n *node.Node, req Request) (Joined, error) {
	if req.TLSDir == "" {
		return Joined{}, errors.New("join: AddToCluster needs the member's TLS directory")
	}
	if req.Replaces != "" {
		if err := n.RemoveMember(ctx, req.Replaces); err != nil {
			return Joined{}, fmt.Errorf("remove %s: %w", req.Replaces, err)
		}
	}
	if req.Members == nil {
		req.Members = n.Status().Nodes
	}
	j, err := configureTarget(ctx, req)
	if err != nil {
		return Joined{}, err
	}
	if err := n.AddMember(ctx, j.NodeID, j.Peer.RaftAddr, j.Peer.HTTPAddr, true); err != nil {
		return j, fmt.Errorf("add %s: %w", j.NodeID, err)
	}
	return j, nil
}
