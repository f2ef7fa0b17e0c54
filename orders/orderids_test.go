package orders

import "testing"

// A box's candidates run on from the newest order it applied, one apart
// even while its own proposals are in flight, start at a random id when
// it knows none, and wrap after 2^31-1.
func TestOrderCandidatesRunInSequence(t *testing.T) {
	o := orderIDs{random: func() int64 { return 777 }}
	want := func(applied, id int64) {
		t.Helper()
		if got := o.candidate(applied); got != id {
			t.Fatalf("candidate(applied %d) = %d, want %d", applied, got, id)
		}
	}
	want(0, 777) // no order known: the random start
	want(0, 778)
	want(0, 779)
	want(778, 780)   // its own proposals are ahead of what it applied
	want(5000, 5001) // another box's orders moved the store on
	want(5001, 5002)
	want(maxOrderID-1, maxOrderID)
	want(maxOrderID, 1) // after the last id, the first
	want(1, 2)
}
