// Package cloudsync pushes order changes from the replicated outbox to
// Firestore. Only the Raft leader runs it.
//
// # Flow
//
// Every committed order change leaves a row in the outbox, a table of the
// replicated state (so every node has it). The leader's Syncer reads the
// oldest pending rows locally (Outbox.Pending), writes them to Firestore,
// and then marks them synced through a Raft command (Outbox.MarkSynced).
// A crash, a lost leadership or a failed MarkSynced between the two steps
// only means the same rows are written again later: every write is a full
// document Set or a Delete keyed by the order id, so repeating it is
// harmless. Nothing is ever acknowledged to Firestore's side before it is
// committed locally, and nothing leaves the outbox before Firestore has it.
//
// # Documents
//
// shops/{shopId}/orders/{orderId}, document id = the decimal order id.
// An upsert replaces the whole document with Change.Doc, which carries the
// API's order object fields:
//
//	orderId     integer (always set from Change.OrderID)
//	sessionId   string
//	tableId     string
//	status      string  ACCEPTED | COOKING | READY | SERVED | CANCELLED
//	items       array of maps: menuId string, name string, quantity integer,
//	            toppings (array of maps: toppingId, name, price integer; [] when none),
//	            unitPrice integer, lineTotal integer
//	totalPrice  integer
//	createdAt   string, RFC 3339, exactly as the API shows it
//	updatedAt   string, RFC 3339, exactly as the API shows it
//	requestId   string or null
//	source      string "guest" | "staff" (passed through when present)
//	syncedAt    timestamp set by Firestore (server time) on every write
//
// createdAt and updatedAt are strings, not Firestore timestamps, because
// they come from a store box's clock, which may be wrong (no RTC); the
// document mirrors the API instead of pretending they are trustworthy.
// syncedAt is the cloud's own clock. Extra fields in Doc are written as
// they are. A Doc decoded from the API JSON with encoding/json is fine:
// whole numbers are written as integers, not doubles.
//
// A delete removes the document. On checkout the server adds one delete
// per order of the session; the order stays in the local archive.
//
// Within one batch several changes to the same order are folded: the one
// with the highest Seq decides (a later status overwrites, a delete after
// an upsert deletes). Batches are written one after the other, so the
// per-order order of changes is kept across batches too.
//
// # Failures
//
// Any failure (no network, DNS, timeouts, auth, a Firestore error, no
// quorum for MarkSynced) is retried forever with exponential backoff and
// full jitter: the n-th consecutive failure waits a uniform random time in
// (0, min(MaxBackoff, MinBackoff·2ⁿ⁻¹)]. Every Firestore push and every
// MarkSynced runs under Config.CallTimeout; when a push times out, the
// status names the last RPC error seen (connection refused, DNS, auth) as
// the cause. Memory is bounded: one batch at a time.
//
// The only change that is ever dropped is one whose Doc cannot be
// represented at all (a channel, a function, …): it is logged at Error and
// marked synced so that one bad row cannot stop the shop's sync. Errors
// from Firestore never drop anything. An unknown Op stops the sync with an
// error in the status until a version that knows it becomes leader.
//
// # Integration
//
//   - New once at startup (it does no network I/O; it fails on a bad
//     [firestore] section, naming the setting).
//   - When this node becomes leader: go s.Run(ctx); cancel ctx when
//     leadership is lost (Run returns promptly, nil). Run may be called
//     again in a later term. A deposed leader's write that is still in flight
//     could in theory land after the new leader's write of the same order,
//     leaving an older version of that document until the order changes
//     again; it takes an RPC delayed longer than an election (the old leader
//     cancels at once, the new one needs an election first), so it is
//     accepted rather than paid for with a read per write.
//   - After every applied command that adds outbox rows, on the leader:
//     s.Notify() (non-blocking; a no-op when Run is not running).
//   - Status() for the cluster status; pending comes from the outbox.
//   - Close at shutdown, after Run returned.
package cloudsync
