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

// TestRingWrapsLikeATrimmedList: the circular ring holds exactly what the
// plain list it replaced held (the newest capacity events, a command's
// events never split, the floor at the last dropped id), over many laps
// and with commands of several events, some larger than the ring.
func TestRingWrapsLikeATrimmedList(t *testing.T) {
	const capacity = 7
	h := NewHub(capacity, 0)
	var want []Event // the list the ring must equal
	floor := uint64(0)
	id := uint64(0)
	for step := 0; step < 400; step++ {
		var batch []Event
		for c := 0; c < step%4+1; c++ { // 1-4 commands per publish
			id++
			for k := 0; k < (step+c)%3+1+(step%50/49)*9; k++ { // 1-3 events each, now and then 10
				batch = append(batch, Event{ID: id, Type: "order.updated", Data: []byte{byte(k)}})
			}
		}
		h.Publish(batch)
		want = append(want, batch...)
		if over := len(want) - capacity; over > 0 {
			for over < len(want) && want[over].ID == want[over-1].ID {
				over++
			}
			floor = want[over-1].ID
			want = append([]Event(nil), want[over:]...)
		}
		s, got, ok := h.Subscribe(floor, id, 1)
		h.Unsubscribe(s)
		if !ok || h.floor != floor || len(got) != len(want) {
			t.Fatalf("step %d: ok=%v floor %d want %d, %d events want %d", step, ok, h.floor, floor, len(got), len(want))
		}
		for i := range want {
			if got[i].ID != want[i].ID || got[i].Data[0] != want[i].Data[0] {
				t.Fatalf("step %d: event %d is %d/%d, want %d/%d", step, i, got[i].ID, got[i].Data[0], want[i].ID, want[i].Data[0])
			}
		}
	}
}

// BenchmarkPublishFullRing is one order's event published into a full
// ring of the size a node keeps.
func BenchmarkPublishFullRing(b *testing.B) {
	h := NewHub(10000, 0)
	for i := uint64(1); i <= 10000; i++ {
		h.Publish([]Event{ev(i)})
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h.Publish([]Event{ev(uint64(10001 + i))})
	}
}
