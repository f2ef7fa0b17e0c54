package lanname

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// Resolve asks the LAN who answers name, as a phone's one-shot resolver
// does (RFC 6762 §5.1: a query to the multicast group from an ephemeral
// port, answered by unicast), asking again every 250 ms until ctx ends.
// It returns the addresses of the first answer.
func Resolve(ctx context.Context, name string) ([]net.IP, error) {
	fqdn := dns.Fqdn(strings.ToLower(name))
	c, err := net.ListenUDP("udp4", nil)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.SetReadDeadline(time.Now()) })
	defer stop()
	q := new(dns.Msg)
	q.SetQuestion(fqdn, dns.TypeA)
	q.RecursionDesired = false
	buf, err := q.Pack()
	if err != nil {
		return nil, err
	}
	in := make([]byte, 9000)
	for {
		if _, err := c.WriteToUDP(buf, mdnsGroup); err != nil {
			return nil, fmt.Errorf("mdns query %s: %w", name, err)
		}
		c.SetReadDeadline(time.Now().Add(250 * time.Millisecond))
		for {
			n, _, err := c.ReadFromUDP(in)
			if err != nil {
				break
			}
			var m dns.Msg
			if m.Unpack(in[:n]) != nil || !m.Response {
				continue
			}
			var ips []net.IP
			for _, rr := range m.Answer {
				if a, ok := rr.(*dns.A); ok && strings.EqualFold(a.Hdr.Name, fqdn) {
					ips = append(ips, a.A)
				}
			}
			if len(ips) > 0 {
				return ips, nil
			}
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("mdns: nobody answered %s: %w", name, ctx.Err())
		}
	}
}
