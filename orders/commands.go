// Package orders is the store's domain: catalog, stock, table sessions,
// the admission gate, placing and updating orders, checkout, audit, and
// their HTTP handlers. Every change is one Raft command applied by the
// handlers registered here; the FSM stays generic.
package orders

import (
	"masterorder/raftfsm"
)

// Domain command types (32 and up; 1–31 belong to the cluster). The calls,
// printing, login and PIN-reset commands are numbered in their own files.
const (
	CmdUpsertMenu     raftfsm.CommandType = 32
	CmdSetStock       raftfsm.CommandType = 33
	CmdOpenSession    raftfsm.CommandType = 34
	CmdPlaceOrder     raftfsm.CommandType = 35
	CmdSetOrderStatus raftfsm.CommandType = 36
	CmdCheckoutBegin  raftfsm.CommandType = 37
	CmdCheckoutCancel raftfsm.CommandType = 38
	CmdCheckout       raftfsm.CommandType = 39
	CmdPINFailure     raftfsm.CommandType = 40
	CmdForceRelease   raftfsm.CommandType = 41
	CmdOutboxSynced   raftfsm.CommandType = 42
	CmdRevokeToken    raftfsm.CommandType = 43
	CmdHousekeeping   raftfsm.CommandType = 44
	CmdCloudState     raftfsm.CommandType = 45
	// CmdCloudSetting (46) is in cloud_setting.go, CmdShopTimeZone (123)
	// in timezone.go.
)

// commandVersions is the newest version of each domain command this build
// applies (1 when absent); it proposes them once the cluster's feature
// level allows (levels.go: a new version needs a new level). A handler applies every older
// version exactly as the build that introduced it (raftfsm.ApplyBatch,
// mixed versions). Version 2:
//   - setOrderStatus: a closed session's orders answer 410 SESSION_CLOSED;
//   - placeOrder: row 12 (PRICE_MISMATCH) before an unavailable item's
//     OUT_OF_STOCK; the proposer's attempt id;
//   - setStock, checkout steps: the request id the FSM remembers; checkout
//     stores the payment and answers taxIncluded;
//   - forceRelease: only lock:, pinlock: and burst: keys;
//   - upsertMenu: the content patch (names, descriptions, allergens);
//   - reprint: archived orders too (reprint.go).
//
// Version 3 of placeOrder: lines carry options and a note, orders a
// station per line and a ticket number (lines.go). Version 4: the same
// command and its cached result in binary (placecodec.go). Version 5: the
// same command; the admitted order's row holds its key's result and its
// cart's window, which were two KV keys (place.go, store/replay.go).
// Version 6: the same command; the guest's cooldown and the session's
// burst window are one KV record named by the order's Raft index, which
// appends, instead of a key per phone and one per session
// (windowrecords.go). Version 3 of forceRelease: a burst window held in
// such a record is released too.
//
// Version 3 of checkout: the receipt's lines name their options and
// toppings (printing.go).
var commandVersions = map[raftfsm.CommandType]uint8{
	CmdSetStock: 2, CmdPlaceOrder: 6, CmdSetOrderStatus: 2, CmdCheckoutBegin: 2,
	CmdCheckoutCancel: 2, CmdCheckout: 3, CmdForceRelease: 3, CmdReprint: 2,
	CmdUpsertMenu: 2, // the item's words (content patch, content.go)
	CmdCloudState: 2, // the setting it is about and the problem's kind (cloud.go)
}

// versionOf is the version this build proposes for t.
func versionOf(t raftfsm.CommandType) uint8 {
	if v, ok := commandVersions[t]; ok {
		return v
	}
	return 1
}

// Register adds the domain commands to the node's dispatch table, and
// this build's feature levels (levels.go).
func Register(reg *raftfsm.Registry) {
	registerTable(commandTable{reg: reg, maxVersion: versionOf})
	registerLevels(reg, featureLevels)
}

// registerTable adds every domain command, one line each (tests register
// an older build's table with it). A handler receives its payload decoded
// and valid, and the coordination KV at its index (register, dispatch.go).
func registerTable(tab commandTable) {
	// The gate's memory of the files (admitstate.go), one per table.
	if tab.admit == nil {
		tab.admit = &admitState{}
	}
	tab.reg.OnApplied(tab.admit.observe)
	// The guest handler's replay check reads it too (preadmit.go).
	tab.reg.SetMemory(tab.admit)
	// catalog.go
	register(tab, CmdUpsertMenu, "orders.upsertMenu", applyUpsertMenu)
	register(tab, CmdSetStock, "orders.setStock", applySetStock)
	// sessions.go
	register(tab, CmdOpenSession, "orders.openSession", applyOpenSession)
	register(tab, CmdCheckoutBegin, "orders.checkoutBegin", applyCheckoutBegin)
	register(tab, CmdCheckoutCancel, "orders.checkoutCancel", applyCheckoutCancel)
	register(tab, CmdCheckout, "orders.checkout", applyCheckout)
	// place.go; each node keeps its own menu cache for pricing inside Apply.
	register(tab, CmdPlaceOrder, "orders.placeOrder", placeOrderWith(&catalog{}, tab.admit))
	// order_status.go
	register(tab, CmdSetOrderStatus, "orders.setOrderStatus", applySetOrderStatus)
	// security.go
	register(tab, CmdPINFailure, "orders.pinFailure", applyPINFailure)
	register(tab, CmdForceRelease, "orders.forceRelease", forceReleaseWith(tab.admit))
	register(tab, CmdRevokeToken, "orders.revokeToken", applyRevokeToken)
	register(tab, CmdLoginFailure, "orders.loginFailure", applyLoginFailure)
	register(tab, CmdResetPIN, "orders.resetPIN", applyResetPIN)
	// housekeeping.go
	register(tab, CmdHousekeeping, "orders.housekeeping", housekeepingWith(tab.admit))
	register(tab, CmdOutboxSynced, "orders.outboxSynced", applyOutboxSynced)
	// cloud.go, cloud_setting.go, preadmit.go
	register(tab, CmdCloudState, "orders.cloudState", applyCloudState)
	register(tab, CmdCloudSetting, "orders.cloudSetting", applyCloudSetting)
	// timezone.go
	register(tab, CmdShopTimeZone, "orders.shopTimeZone", applyShopTimeZone)
	register(tab, CmdRejectionSummary, "orders.rejectionSummary", applyRejectionSummary)
	// calls.go, printing.go, bump.go
	registerCalls(tab)
	registerPrinting(tab)
	// content.go
	registerContent(tab)
	// lines.go
	registerLines(tab)
	// menuimport.go
	registerMenuImport(tab)
	// clock.go
	registerClock(tab)
}
