package lanname

import (
	"net"
	"testing"

	"github.com/miekg/dns"
)

func TestCheckName(t *testing.T) {
	for _, ok := range []string{"masterorder.local", "ramen-ya.local", "Order.Local."} {
		if err := CheckName(ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "masterorder", "masterorder.com", ".local", "-x.local", "a_b.local", "a..local"} {
		if CheckName(bad) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// Only the active box answers, only for its name, with a short TTL.
func TestRecordsOnlyWhileActive(t *testing.T) {
	a := &Answerer{fqdn: "masterorder.local.", addrs: func() []net.IP { return []net.IP{net.IPv4(10, 77, 0, 2), net.ParseIP("fe80::1")} }, done: make(chan struct{})}
	q := dns.Question{Name: "MasterOrder.local.", Qtype: dns.TypeA, Qclass: dns.ClassINET}
	if rr := a.Records(q); len(rr) != 0 {
		t.Fatalf("inactive box answered %v", rr)
	}
	a.active.Store(true)
	rr := a.Records(q)
	if len(rr) != 1 {
		t.Fatalf("answer %v, want one A record", rr)
	}
	if ar := rr[0].(*dns.A); !ar.A.Equal(net.IPv4(10, 77, 0, 2)) || ar.Hdr.Ttl != TTL {
		t.Fatalf("answer %v", ar)
	}
	if rr := a.Records(dns.Question{Name: "other.local.", Qtype: dns.TypeA}); len(rr) != 0 {
		t.Fatalf("answered another name: %v", rr)
	}
	if rr := a.Records(dns.Question{Name: "masterorder.local.", Qtype: dns.TypeAAAA}); len(rr) != 0 {
		t.Fatalf("answered AAAA: %v", rr)
	}
	if flush := a.records(true); flush[0].Header().Class != dns.ClassINET|1<<15 {
		t.Fatal("an announcement without the cache-flush bit")
	}
}
