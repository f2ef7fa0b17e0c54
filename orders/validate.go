package orders

import (
	"masterorder/orders/admission"
)

// A committed entry is applied on every node. One whose payload breaks a
// database constraint or a KV limit (a negative price, a 600-byte client
// id) made the handler fail, and a failing handler halts the FSM, on every
// node at the same index: one corrupt or hostile entry would stop the
// whole store. So every command checks its fields before it writes, and
// register (dispatch.go) answers a bad one with 400 MALFORMED_COMMAND, the
// same on every node.
//
// The rules accept everything the HTTP handlers propose (they validate the
// same fields first), so honest commands from any version pass; they only
// turn what would have halted or corrupted the replica into a rejection.
// A rule for an existing field never tightens between builds (a node of
// the new build would reject what an old one applies, a divergence); new
// rules go with new fields or a new command version (commandVersions).

const (
	maxNodeLen   = 64
	maxClientLen = 128
)

// printable: visible ASCII only, nothing a log line or a KV key could
// stumble over.
func printable(s string, maxLen int) bool {
	if len(s) == 0 || len(s) > maxLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

func validNode(s string) bool { return s == "" || admission.ValidID(s) && len(s) <= maxNodeLen }

func isLowerHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !(s[i] >= '0' && s[i] <= '9' || s[i] >= 'a' && s[i] <= 'f') {
			return false
		}
	}
	return true
}

func (c upsertMenuCmd) valid() bool {
	m := c.Item
	if !admission.ValidID(m.MenuID) || !validText(m.Name, maxNameLen, true) || !validText(m.NameEn, maxNameLen, false) ||
		!validText(m.Category, 64, false) || m.Price < 0 || m.Price > maxPriceYen || len(m.Toppings) > 20 ||
		m.SortOrder < -1_000_000 || m.SortOrder > 1_000_000 {
		return false
	}
	seen := map[string]bool{}
	for _, t := range m.Toppings {
		if !admission.ValidID(t.ToppingID) || seen[t.ToppingID] || t.ToppingID == m.MenuID || !validText(t.Name, maxNameLen, true) ||
			!validText(t.NameEn, maxNameLen, false) || t.Price < 0 || t.Price > maxPriceYen {
			return false
		}
		seen[t.ToppingID] = true
	}
	return true
}

func (c setStockCmd) valid() bool {
	return admission.ValidID(c.SKU) && (c.Quantity == nil || *c.Quantity >= 0 && *c.Quantity <= maxStock) && validRequestID(c.RequestID)
}

// validRequestID: a staff request id or an attempt id (empty: none).
func validRequestID(s string) bool { return s == "" || admission.ValidID(s) }

// validPayment: how a bill was paid (API.md), or not said.
func validPayment(s string) bool {
	switch s {
	case "", "cash", "card", "qr", "other":
		return true
	}
	return false
}

func (c openSessionCmd) valid() bool {
	return validSessionID(c.SessionID) && admission.ValidID(c.TableID) && len(c.PIN) == 4 && isDigits(c.PIN)
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func (c placeOrderCmd) valid() bool {
	if !validSessionID(c.SessionID) || !validNode(c.Node) || !isLowerHex(c.Fingerprint, 64) {
		return false
	}
	if c.RequestID != "" {
		if k, ok := admission.ParseIdempotencyKey(c.RequestID); !ok || k != c.RequestID {
			return false
		}
	}
	switch c.Source {
	case "guest":
		if c.RequestID == "" || !admission.ValidClientID(c.ClientID) {
			return false
		}
	case "staff":
		if c.ClientID != "" && !admission.ValidClientID(c.ClientID) {
			return false
		}
	default:
		return false
	}
	// Normalized lines: identical lines summed, so a quantity may exceed
	// 99, never 50 lines of 99.
	if len(c.Items) < 1 || len(c.Items) > admission.MaxLines {
		return false
	}
	for _, l := range c.Items {
		if !admission.ValidID(l.MenuID) || l.Quantity < 1 || l.Quantity > admission.MaxLines*admission.MaxQuantity ||
			len(l.Toppings) > admission.MaxToppings {
			return false
		}
		for _, t := range l.Toppings {
			if !admission.ValidID(t) {
				return false
			}
		}
	}
	w := c.Windows
	return validRequestID(c.Attempt) && w.CooldownMs >= 0 && w.BurstMs >= 0 && w.PayloadMs >= 0 && w.IdempotencyMs >= 0
}

func (c checkoutCmd) valid() bool {
	return validSessionID(c.SessionID) && c.LockTTLms >= 0 && validNode(c.Node) && validRequestID(c.RequestID) &&
		validPayment(c.Payment) && (c.TaxRatePercent == nil || *c.TaxRatePercent >= 0 && *c.TaxRatePercent <= 100)
}

func (c pinFailureCmd) valid() bool {
	return validSessionID(c.SessionID) && printable(c.Client, maxClientLen) && validNode(c.Node)
}

func (c forceReleaseCmd) valid() bool {
	return validKey(c.Key) && validNode(c.Node)
}

func (c revokeTokenCmd) valid() bool { return isLowerHex(c.TokenID, 32) }

// The commands below check nothing before their handler runs, each for a
// reason: a rule added now would answer differently from the builds
// before (a divergence), and none of their fields can break a constraint.

// setOrderStatusCmd: an unknown order answers 404 and an unknown status
// 409 INVALID_TRANSITION in the handler; Node is not written.
func (c setOrderStatusCmd) valid() bool { return true }

// reprintCmd: an unknown order answers 404 in the handler.
func (c reprintCmd) valid() bool { return true }

// housekeepingCmd: Limit is clamped, a retention of 0 or less keeps
// everything, the wall-clock cutoffs only delete older rows.
func (c housekeepingCmd) valid() bool { return true }

// outboxSyncedCmd: an unknown seq deletes nothing; SyncedAt is display
// only.
func (c outboxSyncedCmd) valid() bool { return true }

// cloudState is stored as it came, for display.
func (c cloudState) valid() bool { return true }

// The next three judge their fields in the handler with the reason codes
// they have always answered (INVALID_REQUEST, or an ignored failure).
func (c resetPINCmd) valid() bool         { return true }
func (c loginFailureCmd) valid() bool     { return true }
func (c rejectionSummaryCmd) valid() bool { return true }
