package peerfind

import (
	"net"
	"testing"
)

func TestParseTakesOnlyMembersOfThisCluster(t *testing.T) {
	ip := net.IPv4(10, 78, 0, 21)
	name := "masterorder-ab12." + ServiceType + ".local."
	txt := append([]string{"id=xyz", "state=member"}, TXT("a", "c0ffee", 7000, 443)...)
	m, ok := Parse(name, ip, 80, txt, "c0ffee")
	if !ok || m.NodeID != "a" || !m.IP.Equal(ip) || m.RaftPort != 7000 || m.HTTPSPort != 443 || m.HTTPPort != 80 {
		t.Fatalf("Parse = %+v, %v", m, ok)
	}
	for what, c := range map[string]struct {
		name    string
		ip      net.IP
		txt     []string
		cluster string
	}{
		"another store's box": {name, ip, txt, "beef"},
		"a box in setup mode": {name, ip, []string{"id=xyz", "state=setup"}, "c0ffee"},
		"another service":     {"printer._ipp._tcp.local.", ip, txt, "c0ffee"},
		"no address":          {name, nil, txt, "c0ffee"},
	} {
		if _, ok := Parse(c.name, c.ip, 80, c.txt, c.cluster); ok {
			t.Errorf("%s taken for a member", what)
		}
	}
}

func TestClusterTagNamesTheCA(t *testing.T) {
	if ClusterTag([]byte("not pem")) != "" {
		t.Fatal("a tag for no certificate")
	}
	a := ClusterTag([]byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"))
	b := ClusterTag([]byte("-----BEGIN CERTIFICATE-----\nAAAB\n-----END CERTIFICATE-----\n"))
	if len(a) != 16 || a == b {
		t.Fatalf("tags %q %q", a, b)
	}
}
