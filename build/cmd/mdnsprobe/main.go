// Command mdnsprobe asks the local network, by mDNS / DNS-SD, for the
// instances of a service (by default _masterorder._tcp, what a box in setup
// mode announces) and prints each one found as a JSON line. The boot test
// (build/boot-test.sh) runs it inside the network namespace its VM is
// attached to, to see the box's announcement as a phone on the store
// Wi-Fi would.
//
//	mdnsprobe -iface motap0 [-service _masterorder._tcp] [-timeout 5s] [-tries 3]
//
// Exit status 0 when at least one instance answered, 1 when none did, 2 on
// bad usage.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"sort"
	"time"

	"github.com/hashicorp/mdns"
)

type found struct {
	Instance string   `json:"instance"`
	Host     string   `json:"host"`
	IPv4     string   `json:"ipv4,omitempty"`
	Port     int      `json:"port"`
	TXT      []string `json:"txt"`
}

func main() {
	iface := flag.String("iface", "", "network interface to ask on (default: the system's choice)")
	service := flag.String("service", "_masterorder._tcp", "DNS-SD service type")
	timeout := flag.Duration("timeout", 5*time.Second, "how long one query listens for answers")
	tries := flag.Int("tries", 3, "queries before giving up")
	flag.Parse()
	// hashicorp/mdns logs every malformed packet it sees; avahi's IPv6
	// chatter is none of this probe's business.
	log.SetOutput(io.Discard)

	params := mdns.DefaultParams(*service)
	params.Timeout = *timeout
	params.DisableIPv6 = true
	if *iface != "" {
		ifi, err := net.InterfaceByName(*iface)
		if err != nil {
			fmt.Fprintf(os.Stderr, "mdnsprobe: %v\n", err)
			os.Exit(2)
		}
		params.Interface = ifi
	}
	seen := map[string]found{}
	for try := 0; try < *tries && len(seen) == 0; try++ {
		entries := make(chan *mdns.ServiceEntry, 16)
		params.Entries = entries
		done := make(chan error, 1)
		go func() { done <- mdns.Query(params); close(entries) }()
		for e := range entries {
			f := found{Instance: e.Name, Host: e.Host, Port: e.Port, TXT: e.InfoFields}
			if e.AddrV4 != nil {
				f.IPv4 = e.AddrV4.String()
			}
			seen[e.Name] = f
		}
		if err := <-done; err != nil {
			fmt.Fprintf(os.Stderr, "mdnsprobe: query: %v\n", err)
		}
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	enc := json.NewEncoder(os.Stdout)
	for _, n := range names {
		f := seen[n]
		sort.Strings(f.TXT)
		_ = enc.Encode(f)
	}
	if len(seen) == 0 {
		fmt.Fprintf(os.Stderr, "mdnsprobe: no %s instance answered\n", *service)
		os.Exit(1)
	}
}
