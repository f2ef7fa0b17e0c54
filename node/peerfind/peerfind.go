// Package peerfind finds the current address of a store box by its node
// id over multicast DNS. Every member announces the DNS-SD service
// ServiceType (setup/announce.go, started by cli) with TXT records that
// name its node id and its cluster (a tag of the cluster CA), so a box
// whose DHCP lease changed is found again by what it is, not by where it
// was. Nothing found here is trusted: the caller dials the address and
// the mutual-TLS handshake proves the node id (node/peercheck.go).
package peerfind

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"io"
	"log"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/mdns"
)

// ServiceType is the DNS-SD service every box announces (the same as
// setup.ServiceType: one announcement serves setup and members).
const ServiceType = "_masterorder._tcp"

// The TXT keys a member adds to its announcement.
const (
	KeyNode    = "node"    // its node id (the Raft server id, its certificate's name)
	KeyCluster = "cluster" // ClusterTag of its cluster CA
	KeyRaft    = "raft"    // its raft port
	KeyHTTPS   = "https"   // its HTTPS port, if any
)

// Member is one member's answer.
type Member struct {
	NodeID    string
	IP        net.IP
	HTTPPort  int // the port the service record names (plain HTTP)
	RaftPort  int
	HTTPSPort int
}

// TXT is what a member adds to its announcement's TXT record.
func TXT(nodeID, cluster string, raftPort, httpsPort int) []string {
	out := []string{KeyNode + "=" + nodeID, KeyCluster + "=" + cluster, KeyRaft + "=" + strconv.Itoa(raftPort)}
	if httpsPort > 0 {
		out = append(out, KeyHTTPS+"="+strconv.Itoa(httpsPort))
	}
	return out
}

// ClusterTag names a cluster by its CA certificate (PEM): the first 8
// bytes of the SHA-256 of the first certificate's DER, in hex. Two stores
// on one LAN (a food court) have different tags; a box never takes the
// other store's "a" for its own.
func ClusterTag(caPEM []byte) string {
	block, _ := pem.Decode(caPEM)
	if block == nil {
		return ""
	}
	sum := sha256.Sum256(block.Bytes)
	return hex.EncodeToString(sum[:8])
}

var quietLog = log.New(io.Discard, "", 0)

// Browse asks the LAN once for the members of cluster and returns what
// answered within wait, by node id.
func Browse(ctx context.Context, cluster string, wait time.Duration) (map[string]Member, error) {
	entries := make(chan *mdns.ServiceEntry, 64)
	found := map[string]Member{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e := range entries {
			if m, ok := Parse(e.Name, e.AddrV4, e.Port, e.InfoFields, cluster); ok {
				found[m.NodeID] = m
			}
		}
	}()
	err := mdns.QueryContext(ctx, &mdns.QueryParam{Service: ServiceType, Domain: "local", Timeout: wait, Entries: entries,
		DisableIPv6: true, Logger: quietLog})
	close(entries)
	<-done
	if len(found) > 0 {
		return found, nil
	}
	return found, err
}

// Parse reads one DNS-SD answer: a member of cluster, or false.
func Parse(name string, ip net.IP, port int, txt []string, cluster string) (Member, bool) {
	if !strings.Contains(name, ServiceType) || ip == nil || ip.To4() == nil || ip.IsUnspecified() || ip.IsLoopback() {
		return Member{}, false
	}
	m := Member{IP: ip.To4(), HTTPPort: port}
	var tag string
	for _, kv := range txt {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case KeyNode:
			m.NodeID = v
		case KeyCluster:
			tag = v
		case KeyRaft:
			m.RaftPort, _ = strconv.Atoi(v)
		case KeyHTTPS:
			m.HTTPSPort, _ = strconv.Atoi(v)
		}
	}
	if m.NodeID == "" || tag == "" || tag != cluster {
		return Member{}, false
	}
	return m, true
}
