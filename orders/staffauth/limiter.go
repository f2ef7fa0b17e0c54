package staffauth

import (
	"container/list"
	"net"
	"sync"
	"time"
)

// Login limiter defaults: 5 failures within a minute lock the address for
// a minute; at most 10,000 addresses are remembered.
const (
	DefaultMaxFailures = 5
	DefaultWindow      = time.Minute
	DefaultLockout     = time.Minute
	DefaultMaxEntries  = 10000
)

// LoginLimiter counts failed logins per remote address, in memory on one
// node. It is safe for concurrent use. Set the fields before first use;
// zero fields take the defaults above, and Now defaults to time.Now.
//
// Key it by the connection's address (http.Request.RemoteAddr), never by
// X-Forwarded-For or echo's RealIP, which a guest can write. IPv6
// addresses are counted per /64, since one device can take any address in
// its prefix. When full, the least recently touched address is forgotten.
type LoginLimiter struct {
	MaxFailures int
	Window      time.Duration
	Lockout     time.Duration
	MaxEntries  int
	Now         func() time.Time

	mu      sync.Mutex
	entries map[string]*list.Element // of *limiterEntry
	lru     list.List                // front = most recently touched
}

type limiterEntry struct {
	key         string
	windowStart time.Time
	failures    int
	inFlight    int // attempts begun and not yet judged
	lockedUntil time.Time
}

// NewLoginLimiter returns a limiter with the defaults.
func NewLoginLimiter() *LoginLimiter { return &LoginLimiter{} }

// Allow reports whether addr may try a password now; if not, retryAfter
// says how long it stays locked.
func (l *LoginLimiter) Allow(addr string) (ok bool, retryAfter time.Duration) {
	key := limiterKey(addr)
	l.mu.Lock()
	defer l.mu.Unlock()
	el := l.entries[key]
	if el == nil {
		return true, 0
	}
	e := el.Value.(*limiterEntry)
	if now := l.now(); now.Before(e.lockedUntil) {
		return false, e.lockedUntil.Sub(now)
	}
	return true, 0
}

// Begin starts a login attempt from addr, counting it before the password
// is evaluated: N parallel attempts from one address are all "in flight"
// at once, and without this each would pass Allow before any Failure
// landed. ok is false (with retryAfter) when the address is locked or its
// failures plus attempts in flight reach MaxFailures. Call end exactly
// once with the verdict when ok.
func (l *LoginLimiter) Begin(addr string) (ok bool, retryAfter time.Duration, end func(Verdict)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, now, lockedFor := l.entry(addr)
	if lockedFor > 0 {
		return false, lockedFor, nil
	}
	if e.failures > 0 && now.Sub(e.windowStart) >= l.window() {
		e.windowStart, e.failures = now, 0
	}
	if e.failures+e.inFlight >= l.maxFailures() {
		return false, time.Second, nil
	}
	e.inFlight++
	var once sync.Once
	return true, 0, func(v Verdict) {
		once.Do(func() {
			l.mu.Lock()
			if el := l.entries[e.key]; el != nil {
				if en := el.Value.(*limiterEntry); en.inFlight > 0 {
					en.inFlight--
				}
			}
			l.mu.Unlock()
			switch v {
			case Succeeded:
				l.Success(addr)
			case Failed:
				l.Failure(addr)
			}
		})
	}
}

// Verdict ends a login attempt begun with Begin.
type Verdict int

// The verdicts: a wrong password, a right one, or no judgement (the
// attempt was not evaluated: it counts neither way).
const (
	Failed Verdict = iota
	Succeeded
	Abandoned
)

// Key is the unit addr is counted under (IPv4 address or IPv6 /64), for
// a cluster-wide count kept elsewhere.
func Key(addr string) string { return limiterKey(addr) }

// Failure records a wrong password from addr. It returns whether addr is
// now locked, and for how long.
func (l *LoginLimiter) Failure(addr string) (locked bool, retryAfter time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, now, lockedFor := l.entry(addr)
	if lockedFor > 0 {
		return true, lockedFor
	}
	if e.failures == 0 || now.Sub(e.windowStart) >= l.window() {
		e.windowStart, e.failures = now, 0
	}
	e.failures++
	if e.failures >= l.maxFailures() {
		e.lockedUntil = now.Add(l.lockout())
		e.failures = 0
		return true, l.lockout()
	}
	return false, 0
}

// Success forgets addr's failures after a correct password.
func (l *LoginLimiter) Success(addr string) {
	key := limiterKey(addr)
	l.mu.Lock()
	defer l.mu.Unlock()
	if el := l.entries[key]; el != nil {
		if el.Value.(*limiterEntry).inFlight > 0 {
			// Other attempts are still being judged: keep counting them.
			e := el.Value.(*limiterEntry)
			e.failures, e.lockedUntil = 0, time.Time{}
			return
		}
		l.lru.Remove(el)
		delete(l.entries, key)
	}
}

// Len is the number of addresses remembered.
func (l *LoginLimiter) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.entries)
}

// touch returns key's entry, creating it and evicting the least recently
// touched entries beyond MaxEntries. Caller holds mu.
// entry is addr's entry, marked used, the time now, and how long addr
// stays locked (0: not locked). With l.mu held.
func (l *LoginLimiter) entry(addr string) (e *limiterEntry, now time.Time, lockedFor time.Duration) {
	now = l.now()
	e = l.touch(limiterKey(addr))
	if now.Before(e.lockedUntil) {
		lockedFor = e.lockedUntil.Sub(now)
	}
	return e, now, lockedFor
}

func (l *LoginLimiter) touch(key string) *limiterEntry {
	if l.entries == nil {
		l.entries = make(map[string]*list.Element)
	}
	if el := l.entries[key]; el != nil {
		l.lru.MoveToFront(el)
		return el.Value.(*limiterEntry)
	}
	for len(l.entries) >= l.maxEntries() && l.lru.Len() > 0 {
		oldest := l.lru.Back()
		l.lru.Remove(oldest)
		delete(l.entries, oldest.Value.(*limiterEntry).key)
	}
	e := &limiterEntry{key: key}
	l.entries[key] = l.lru.PushFront(e)
	return e
}

func (l *LoginLimiter) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

func (l *LoginLimiter) maxFailures() int {
	if l.MaxFailures > 0 {
		return l.MaxFailures
	}
	return DefaultMaxFailures
}

func (l *LoginLimiter) window() time.Duration {
	if l.Window > 0 {
		return l.Window
	}
	return DefaultWindow
}

func (l *LoginLimiter) lockout() time.Duration {
	if l.Lockout > 0 {
		return l.Lockout
	}
	return DefaultLockout
}

func (l *LoginLimiter) maxEntries() int {
	if l.MaxEntries > 0 {
		return l.MaxEntries
	}
	return DefaultMaxEntries
}

// limiterKey normalizes "ip:port" or "ip" to the unit that is counted:
// the IPv4 address, or the IPv6 /64.
func limiterKey(addr string) string {
	host := addr
	if h, _, err := net.SplitHostPort(addr); err == nil {
		host = h
	}
	ip := net.ParseIP(host)
	if ip == nil {
		if len(host) > 64 {
			host = host[:64]
		}
		return host
	}
	if v4 := ip.To4(); v4 != nil {
		return v4.String()
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}
