package cluster

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"masterorder/orders"
)

func TestBundleLoadsAndAddBoxJoins(t *testing.T) {
	cl, err := New("ramen-tanaka")
	if err != nil {
		t.Fatal(err)
	}
	if cl.StaffPasswordHash, _, _, err = Password("tonkotsu-2026-shop"); err != nil {
		t.Fatal(err)
	}
	if cl.KitchenPasswordHash, _, _, err = Password("kitchen screen 77"); err != nil {
		t.Fatal(err)
	}
	boxes := []Box{{ID: "a", Host: "192.168.1.10", HTTPPort: "80", RaftPort: "7000", HTTPSPort: "443"},
		{ID: "b", Host: "192.168.1.11", HTTPPort: "80", RaftPort: "7000", HTTPSPort: "443"}}
	peers := cl.Peers(boxes)
	b, err := cl.Bundle(boxes[0], peers, false, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"ca.pem", "ca-key.pem", "a.pem", "a-key.pem", "a-https.pem", "a-https-key.pem"} {
		if len(b.Files[f]) == 0 {
			t.Errorf("bundle lacks %s", f)
		}
	}
	dir := t.TempDir()
	if err := b.WriteTLS(filepath.Join(dir, "tls")); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(filepath.Join(dir, "tls", "a-key.pem")); st == nil || st.Mode().Perm() != 0o600 {
		t.Errorf("key mode: %v", st)
	}
	c := b.Config
	c.UseLayout(filepath.Join(dir, "tls"), filepath.Join(dir, "data"))
	raw, err := c.Marshal("# test\n")
	if err != nil {
		t.Fatal(err)
	}
	fc, err := orders.ParseConfig(raw)
	if err != nil {
		t.Fatal(err)
	}
	back := FromMember(fc, cl.CA)
	j, err := back.AddBox(Box{ID: "c", Host: "192.168.1.12", HTTPPort: "80", RaftPort: "7000", HTTPSPort: "443"}, peers, false)
	if err != nil {
		t.Fatal(err)
	}
	if !j.Config.Join || len(j.Config.Peers) != 3 || j.Config.Staff.PasswordHash != cl.StaffPasswordHash || j.Config.ClusterSecret != cl.ClusterSecret {
		t.Errorf("add-box config: %+v", j.Config)
	}
	if _, err := back.AddBox(boxes[1], peers, false); err == nil {
		t.Error("a box already in the cluster was added again")
	}
}

func TestPasswordRuleAndBadFileNames(t *testing.T) {
	var weak *WeakPasswordError
	if err := CheckPassword("password123"); !errors.As(err, &weak) {
		t.Errorf("a common word passed: %v", err)
	}
	if _, plain, generated, err := Password(""); err != nil || !generated || len(plain) != 16 {
		t.Errorf("a generated password: %q %v %v", plain, generated, err)
	}
	for _, name := range []string{"../etc/passwd.pem", ".hidden.pem", "a.toml"} {
		if err := (Bundle{Files: map[string][]byte{name: []byte("x")}}).WriteTLS(t.TempDir()); err == nil {
			t.Errorf("wrote %q", name)
		}
	}
}

// The wizard takes a password hash made elsewhere only when every box can
// check logins with it: bcrypt, cost 10 to 12.
func TestCheckPasswordHash(t *testing.T) {
	h10, err := bcrypt.GenerateFromPassword([]byte("tonkotsu-2026-shop"), bcrypt.DefaultCost)
	if err != nil {
		t.Fatal(err)
	}
	h4, err := bcrypt.GenerateFromPassword([]byte("tonkotsu-2026-shop"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	good := string(h10)
	for _, h := range []string{good, "$2b$" + good[4:], strings.Replace(good, "$10$", "$12$", 1)} {
		if err := CheckPasswordHash(h); err != nil {
			t.Errorf("%q refused: %v", h, err)
		}
	}
	for _, h := range []string{"", "tonkotsu-2026-shop", string(h4), strings.Replace(good, "$10$", "$09$", 1),
		strings.Replace(good, "$10$", "$13$", 1), strings.Replace(good, "$10$", "$31$", 1), "$2y$" + good[4:], "$2$10$" + good[7:],
		good[:59], good + "x", good[:40] + "!" + good[41:], " " + good, good + "\n"} {
		if CheckPasswordHash(h) == nil {
			t.Errorf("%q accepted", h)
		}
	}
}

func TestNextNodeID(t *testing.T) {
	used := map[string]bool{}
	var ids []string
	for range 28 {
		id := NextNodeID(used)
		used[id] = true
		ids = append(ids, id)
	}
	if ids[0] != "a" || ids[2] != "c" || ids[25] != "z" || ids[26] != "n27" || ids[27] != "n28" {
		t.Errorf("ids in turn: %v", ids)
	}
	if id := NextNodeID(map[string]bool{"a": true, "c": true}); id != "b" {
		t.Errorf("after a and c: %s", id)
	}
}
