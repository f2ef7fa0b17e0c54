package stream

import "testing"

func ev(id uint64) Event { return Event{ID: id, Type: "order.created", Data: []byte("{}")} }

func TestResumeWithinTheRingGetsExactlyTheGap(t *testing.T) {
	h := NewHub(100, 10)
	h.Publish([]Event{ev(11), ev(12), ev(15)})
	s, backlog, ok := h.Subscribe(12, 15, 8)
	defer h.Unsubscribe(s)
	if !ok || len(backlog) != 1 || backlog[0].ID != 15 {
		t.Fatalf("resume after 12: ok=%v backlog=%v", ok, backlog)
	}
	h.Publish([]Event{ev(16)})
	if e := <-s.C; e.ID != 16 {
		t.Fatalf("live event %d", e.ID)
	}
}

func TestTooOldOrUnknownNeedsASnapshot(t *testing.T) {
	h := NewHub(3, 0)
	h.Publish([]Event{ev(1), ev(2), ev(3), ev(4), ev(5)})
	if _, _, ok := h.Subscribe(1, 5, 8); ok {
		t.Fatal("an id older than the ring was resumed")
	}
	if _, _, ok := h.Subscribe(9, 5, 8); ok {
		t.Fatal("an id newer than this node applied was resumed")
	}
	if _, b, ok := h.Subscribe(2, 5, 8); !ok || len(b) != 3 {
		t.Fatalf("resume at the floor: %v %v", ok, b)
	}
}

func TestSlowSubscriberIsCutOffNotBlocking(t *testing.T) {
	h := NewHub(100, 0)
	s, _, _ := h.Subscribe(0, 0, 1)
	h.Publish([]Event{ev(1), ev(2)})
	select {
	case <-s.Lost:
	default:
		t.Fatal("a full subscriber was not cut off")
	}
	if h.Clients() != 0 {
		t.Fatalf("clients = %d", h.Clients())
	}
}

func TestResetForgetsTheRing(t *testing.T) {
	h := NewHub(100, 0)
	h.Publish([]Event{ev(1), ev(2)})
	h.Reset(50)
	if _, _, ok := h.Subscribe(2, 50, 8); ok {
		t.Fatal("resumed across a restore")
	}
}
