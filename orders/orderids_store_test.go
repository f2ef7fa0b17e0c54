package orders_test

import "testing"

// Guest orders placed one after another get ids in sequence (their rows
// append to the orders table, orderids.go), through the leader and
// through a follower alike.
func TestGuestOrdersGetIDsInSequence(t *testing.T) {
	s := startStore(t, 3, nil)
	s.seedMenu()
	li, _ := s.c.WaitLeader(10e9)
	var ids []int64
	for i := range 6 {
		g := s.guest(s.openSession("T1"))
		node := li
		if i >= 3 {
			node = (li + 1) % 3
		}
		r := g.order(node, newKey(), cart(line("tea", 1)))
		var out success
		r.json(t, &out)
		if r.Status != 200 || out.OrderID == 0 {
			t.Fatalf("order %d: %d %s", i, r.Status, r.Body)
		}
		ids = append(ids, out.OrderID)
	}
	for i := 1; i < len(ids); i++ {
		if ids[i] != ids[i-1]+1 {
			t.Fatalf("order ids %v: not in sequence", ids)
		}
	}
}
