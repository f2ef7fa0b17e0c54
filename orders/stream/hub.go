// Package stream keeps the recent kitchen events of this node and fans
// them out to Server-Sent Events subscribers. Event ids are Raft log
// indexes, the same on every node, so a screen can resume on any node.
package stream

import (
	"sync"
)

// Event is one kitchen event.
type Event struct {
	ID   uint64 // Raft index of the command
	Type string
	Data []byte
}

// Hub is a ring of the last Capacity events plus live subscribers.
type Hub struct {
	mu       sync.Mutex
	capacity int
	// ring is circular: n events from start, oldest first. Trimming moves
	// start instead of copying the held events (a full ring used to be
	// copied on every publish: 8 % of a node's allocations under load).
	ring     []Event
	start, n int
	// floor is the index below which this hub cannot vouch for continuity
	// (node start, snapshot restore): ids in (floor, last] are all here.
	floor uint64
	subs  map[*Sub]struct{}
}

// Sub is one live subscriber.
type Sub struct {
	C chan Event
	// Lost is closed when the subscriber fell too far behind and was cut
	// off; the client reconnects with Last-Event-ID.
	Lost chan struct{}
}

// NewHub returns a hub holding at least capacity events; floor is the
// applied index at start.
func NewHub(capacity int, floor uint64) *Hub {
	return &Hub{capacity: capacity, floor: floor, subs: map[*Sub]struct{}{}}
}

// Publish appends events (in index order) and hands them to subscribers.
func (h *Hub) Publish(events []Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range events {
		h.push(e)
		for s := range h.subs {
			select {
			case s.C <- e:
			default:
				close(s.Lost)
				delete(h.subs, s)
			}
		}
	}
	if over := h.n - h.capacity; over > 0 {
		var dropped Event
		for ; over > 0; over-- {
			dropped = h.dropOldest()
		}
		// Never split one command's events.
		for h.n > 0 && h.at(0).ID == dropped.ID {
			h.dropOldest()
		}
		h.floor = dropped.ID
	}
}

// at is the i-th held event, oldest first.
func (h *Hub) at(i int) *Event { return &h.ring[(h.start+i)%len(h.ring)] }

// push appends e, growing the ring when it is full (to capacity plus the
// largest publish, once).
func (h *Hub) push(e Event) {
	if h.n == len(h.ring) {
		grown := make([]Event, max(16, 2*len(h.ring)))
		for i := 0; i < h.n; i++ {
			grown[i] = *h.at(i)
		}
		h.ring, h.start = grown, 0
	}
	*h.at(h.n) = e
	h.n++
}

// dropOldest removes and returns the oldest held event.
func (h *Hub) dropOldest() Event {
	e := *h.at(0)
	*h.at(0) = Event{} // let its data go
	h.start = (h.start + 1) % len(h.ring)
	h.n--
	return e
}

// Reset forgets everything (after a snapshot restore: the gap is unknown).
func (h *Hub) Reset(floor uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ring, h.start, h.n = nil, 0, 0
	h.floor = floor
	for s := range h.subs {
		close(s.Lost)
		delete(h.subs, s)
	}
}

// Subscribe registers a subscriber and returns the held events after
// lastID. applied is the node's applied index: events up to it are either
// held or about to be published to the new subscriber. ok is false when
// lastID is older than the hub can vouch for (or newer than the node has
// applied): the caller must send a full snapshot.
func (h *Hub) Subscribe(lastID, applied uint64, buffer int) (s *Sub, backlog []Event, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s = &Sub{C: make(chan Event, buffer), Lost: make(chan struct{})}
	h.subs[s] = struct{}{}
	last := max(h.floor, applied)
	if h.n > 0 {
		last = max(last, h.at(h.n-1).ID)
	}
	if lastID < h.floor || lastID > last {
		return s, nil, false
	}
	for i := 0; i < h.n; i++ {
		if e := h.at(i); e.ID > lastID {
			backlog = append(backlog, *e)
		}
	}
	return s, backlog, true
}

// Unsubscribe removes a subscriber.
func (h *Hub) Unsubscribe(s *Sub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.subs[s]; ok {
		delete(h.subs, s)
	}
}

// Clients counts live subscribers.
func (h *Hub) Clients() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}
