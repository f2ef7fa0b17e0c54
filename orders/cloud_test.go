package orders_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"testing"
	"time"

	"masterorder/node"
	"masterorder/orders"
	"masterorder/orders/cloudsync/emulatortest"
)

const cloudProject = "demo-mo-test"

// cloudDocs lists shops/{shop}/orders in the emulator (as its owner):
// order id → status.
func cloudDocs(t *testing.T, host, shop string) map[string]string {
	t.Helper()
	url := fmt.Sprintf("http://%s/v1/projects/%s/databases/(default)/documents/shops/%s/orders?pageSize=1000", host, cloudProject, shop)
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer owner") // past any security rules
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("read emulator: %v", err)
	}
	if res.StatusCode != http.StatusOK {
		t.Fatalf("read emulator: %s", res.Status)
	}
	defer res.Body.Close()
	var out struct {
		Documents []struct {
			Name   string `json:"name"`
			Fields map[string]struct {
				StringValue string `json:"stringValue"`
			} `json:"fields"`
		} `json:"documents"`
	}
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		t.Fatalf("decode emulator listing: %v", err)
	}
	docs := map[string]string{}
	for _, d := range out.Documents {
		id := d.Name[len(d.Name)-len(lastSegment(d.Name)):]
		docs[id] = d.Fields["status"].StringValue
	}
	return docs
}

func lastSegment(s string) string {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '/' {
			return s[i+1:]
		}
	}
	return s
}

type cloudStatus struct {
	CloudSync struct {
		Enabled    bool    `json:"enabled"`
		Online     bool    `json:"online"`
		Pending    int64   `json:"pending"`
		LastSyncAt *string `json:"lastSyncAt"`
		LastError  *string `json:"lastError"`
	} `json:"cloudSync"`
}

func (s *store) cloud(i int) cloudStatus {
	var st cloudStatus
	s.do(i, "GET", "/api/cluster/status", nil, nil).json(s.t, &st)
	return st
}

func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Orders reach the real Firestore emulator; with the emulator gone they
// keep being accepted and pile up; when it is back they all arrive, once;
// a leader killed mid-sync is replaced and the new one finishes; checkout
// removes the session's orders from the active collection.
func TestCloudSyncWithEmulator(t *testing.T) {
	emu := emulatortest.New(t)
	s := startStore(t, 3, func(_ int, c *orders.FileConfig) {
		c.Firestore = orders.FirestoreConfig{Enabled: true, ProjectID: cloudProject, EmulatorHost: emu.HostPort(), MaxBackoff: node.Duration{Duration: 500 * time.Millisecond}}
	})
	s.seedMenu()
	shop := s.c.Configs[0].ShopID
	sess := s.openSession("C1")
	var ids []string
	place := func(n int) {
		for i := 0; i < n; i++ {
			g := s.guest(sess)
			r := g.order(i%3, newKey(), cart(line("ramen", 1+len(ids)%5), line("tea", 1+len(ids)/5)))
			// The session's burst window, or its previous order still in
			// flight on a loaded machine: wait and retry with the same cart.
			for deadline := time.Now().Add(30 * time.Second); (r.Status == 409 || r.Status == 429) && time.Now().Before(deadline); {
				time.Sleep(1100 * time.Millisecond)
				r = g.order(i%3, newKey(), cart(line("ramen", 1+len(ids)%5), line("tea", 1+len(ids)/5)))
			}
			var o success
			r.json(t, &o)
			if r.Status != 200 {
				t.Fatalf("order: %d %s", r.Status, r.Body)
			}
			ids = append(ids, fmt.Sprint(o.OrderID))
		}
	}
	place(3)
	waitFor(t, "orders in Firestore", 20*time.Second, func() bool { return len(cloudDocs(t, emu.HostPort(), shop)) == 3 })
	waitFor(t, "pending 0 and lastSyncAt on every node", 10*time.Second, func() bool {
		for i := 0; i < 3; i++ {
			c := s.cloud(i).CloudSync
			if !c.Enabled || c.Pending != 0 || c.LastSyncAt == nil || !c.Online {
				return false
			}
		}
		return true
	})

	// The internet goes away: the store keeps taking orders.
	emu.Stop()
	place(4)
	waitFor(t, "offline with pending orders", 60*time.Second, func() bool {
		c := s.cloud(1).CloudSync
		return c.Pending >= 4 && !c.Online && c.LastError != nil
	})
	// Back, and the leader is killed while it catches up.
	if err := emu.Restart(); err != nil {
		t.Fatal(err)
	}
	li, _ := s.c.WaitLeader(5 * time.Second)
	s.c.StopNode(li)
	s.c.WaitLeader(10 * time.Second)
	// The emulator keeps nothing across a restart: what must arrive is
	// exactly the orders taken while it was away.
	ids = ids[3:]
	waitFor(t, "the orders taken offline in Firestore after failover", 40*time.Second, func() bool {
		return len(cloudDocs(t, emu.HostPort(), shop)) == len(ids)
	})
	docs := cloudDocs(t, emu.HostPort(), shop)
	got := make([]string, 0, len(docs))
	for id := range docs {
		got = append(got, id)
	}
	sort.Strings(got)
	want := append([]string(nil), ids...)
	sort.Strings(want)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("documents %v, want %v", got, want)
	}
	s.c.StartNode(li)

	// A status change travels too; checkout empties the active collection.
	s.mustStaff(s.running(0), "PATCH", "/api/staff/orders/"+ids[0], map[string]string{"status": "COOKING"})
	waitFor(t, "status in Firestore", 20*time.Second, func() bool { return cloudDocs(t, emu.HostPort(), shop)[ids[0]] == "COOKING" })
	s.mustStaff(s.running(1), "POST", "/api/staff/sessions/"+sess.ID+"/checkout", nil)
	waitFor(t, "checkout removes documents", 20*time.Second, func() bool { return len(cloudDocs(t, emu.HostPort(), shop)) == 0 })
}
