package orders

// Key prefixes of the coordination KV, shared by the builders below and by
// the code that sweeps or recognises keys (sessionPrefixes,
// sessionOfLock, releasableKey, the locks API), so the two never drift.
const (
	prefixRequest     = "req:"
	prefixIdem        = "idem:"
	prefixPayload     = "payload:"
	prefixBurst       = "burst:"
	prefixCooldown    = "cooldown:"
	prefixLock        = "lock:"
	prefixSessionLock = prefixLock + "session:"
	prefixPINFail     = "pinfail:"
	prefixPINLock     = "pinlock:"
	prefixRevoked     = "revoked:"
	prefixLoginFail   = "loginfail:"
	prefixLoginLock   = "loginlock:"
	prefixCallGap     = "callgap:"
)

// Key builders. Session-scoped keys share a prefix so checkout drops them
// in one sweep.
func keyRequest(id string) string                { return prefixRequest + id }
func keyIdem(sessionID, requestID string) string { return prefixIdem + sessionID + ":" + requestID }
func keyPayload(sessionID, fp string) string     { return prefixPayload + sessionID + ":" + fp }
func keyBurst(sessionID string) string           { return prefixBurst + sessionID }
func keyCooldown(clientID string) string         { return prefixCooldown + clientID }
func keySessionLock(sessionID string) string     { return prefixSessionLock + sessionID }
func keyPINFail(scope, id string) string         { return prefixPINFail + scope + ":" + id }
func keyPINLock(scope, id string) string         { return prefixPINLock + scope + ":" + id }
func keyRevoked(tokenID string) string           { return prefixRevoked + tokenID }
func keyLoginFail(addrKey string) string         { return prefixLoginFail + addrKey }
func keyLoginLock(addrKey string) string         { return prefixLoginLock + addrKey }
func keyCallGap(sessionID string) string         { return prefixCallGap + sessionID }

// keyLoginBudget is the store-wide login lock; keyLoginFailAll counts every
// wrong password in the window.
const (
	keyLoginBudget  = prefixLoginLock + "budget"
	keyLoginFailAll = prefixLoginFail + "all"
)

// sessionPrefixes are the keys checkout drops with a session (its lock is
// deleted on its own).
func sessionPrefixes(sessionID string) []string {
	return []string{keyIdem(sessionID, ""), keyPayload(sessionID, ""), keyBurst(sessionID)}
}

// sessionOfLock is the session a checkout lock key names ("" for any
// other key).
func sessionOfLock(key string) string {
	if len(key) > len(prefixSessionLock) && key[:len(prefixSessionLock)] == prefixSessionLock {
		return key[len(prefixSessionLock):]
	}
	return ""
}
