package orders_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"masterorder/httpapi"
	"masterorder/node"
	"masterorder/orders"
	"masterorder/orders/cloudsync/emulatortest"
)

// cloudPage is GET /api/staff/cloud.
type cloudPage struct {
	Source      string  `json:"source"`
	State       string  `json:"state"`
	Problem     *string `json:"problem"`
	ProjectID   *string `json:"projectId"`
	ClientEmail *string `json:"clientEmail"`
	KeyID       *string `json:"keyId"`
	SavedAt     *string `json:"savedAt"`
	Checked     *string `json:"checked"`
	Online      bool    `json:"online"`
	Pending     int64   `json:"pending"`
	LastSyncAt  *string `json:"lastSyncAt"`
	LastError   *string `json:"lastError"`
}

func str(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

// logBuffer is every node's log, at Debug.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// cloudPageTest is a store whose boxes send the Cloud page's keys to an
// emulator, with every answer the test saw and every log line kept.
type cloudPageTest struct {
	*store
	t       *testing.T
	logs    *logBuffer
	answers [][]byte
}

func startCloudPageStore(t *testing.T, emulatorHost string, mutate func(c *orders.FileConfig)) *cloudPageTest {
	logs := &logBuffer{}
	s := startStoreWith(t, 3, func(i int, c *orders.FileConfig) {
		patient(i, c) // the verdicts are about the cloud, not about elections on a loaded machine
		c.Firestore.EmulatorHost = emulatorHost
		c.Firestore.MaxBackoff = node.Duration{Duration: 500 * time.Millisecond}
		if mutate != nil {
			mutate(c)
		}
	}, func(int) node.Options {
		o := orders.NodeOptions()
		o.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		return o
	})
	return &cloudPageTest{store: s, t: t, logs: logs}
}

// call is a manager's call in lang; its answer is kept.
func (c *cloudPageTest) call(i int, method, path, lang string, body any) resp {
	c.t.Helper()
	r := c.do(i, method, path, map[string]string{"Authorization": "Bearer " + c.token, "Accept-Language": lang}, body)
	c.answers = append(c.answers, r.Body)
	return r
}

func (c *cloudPageTest) page(i int) cloudPage {
	c.t.Helper()
	r := c.call(i, "GET", "/api/staff/cloud", "en", nil)
	if r.Status != 200 {
		c.t.Fatalf("GET /api/staff/cloud on node %d: %d %s", i, r.Status, r.Body)
	}
	var p cloudPage
	r.json(c.t, &p)
	return p
}

func (c *cloudPageTest) putKey(i int, lang string, file []byte) resp {
	c.t.Helper()
	return c.call(i, "PUT", "/api/staff/cloud", lang, map[string]string{"keyFile": string(file)})
}

// everyPage waits until every node's page passes ok.
func (c *cloudPageTest) everyPage(what string, ok func(p cloudPage) bool) {
	c.t.Helper()
	var last cloudPage
	waitFor(c.t, what, 30*time.Second, func() bool {
		for i := range c.c.Nodes {
			if last = c.page(i); !ok(last) {
				return false
			}
		}
		return true
	})
}

// order places one order on a table of its own and returns its id.
func (c *cloudPageTest) order(table string) string {
	c.t.Helper()
	sess := c.openSession(table)
	r := c.guest(sess).order(c.running(0), newKey(), cart(line("ramen", 1)))
	var o success
	r.json(c.t, &o)
	if r.Status != 200 {
		c.t.Fatalf("order: %d %s", r.Status, r.Body)
	}
	return fmt.Sprint(o.OrderID)
}

// refusal is an error answer's body.
type refusal struct {
	ReasonCode string `json:"reasonCode"`
	Message    string `json:"message"`
	Field      string `json:"field"`
	Details    string `json:"details"`
}

// The Cloud page against the real Firestore emulator, its rules letting
// only the sync@ account write: every kind of bad file and a key without
// rights are refused with their words and save nothing; a good key
// uploaded to a follower reaches every box, and orders (the one taken
// before too) are in Firestore within seconds; switching off stops the
// sync; with the internet gone a key is saved anyway and syncs once it is
// back. Throughout, the key is in no answer, no log line, no backup and
// no file of any box's data directory.
func TestCloudPage(t *testing.T) {
	defer orders.SetOutboxTrim(200 * time.Millisecond)()
	emu := emulatortest.NewWithRules(t, emulatortest.WritersRules("sync@"))
	c := startCloudPageStore(t, emu.HostPort(), nil)
	c.seedMenu()
	shop := c.c.Configs[0].ShopID
	li, _ := c.c.WaitLeader(10 * time.Second)
	follower, other := (li+1)%3, (li+2)%3

	good := emulatortest.ServiceAccountKey(t, cloudProject, "sync@"+cloudProject+".iam.gserviceaccount.com")
	noRights := emulatortest.ServiceAccountKey(t, cloudProject, "reader@"+cloudProject+".iam.gserviceaccount.com")
	pieces := append(emulatortest.KeyPieces(t, good), emulatortest.KeyPieces(t, noRights)...)

	c.everyPage("the cloud off on every box", func(p cloudPage) bool { return p.Source == "none" && p.State == "off" })
	before := c.order("B1")

	// ---- every bad input is refused with its words, in both languages
	edit := func(key []byte, f func(m map[string]any)) []byte {
		m := map[string]any{}
		if err := json.Unmarshal(key, &m); err != nil {
			t.Fatal(err)
		}
		f(m)
		b, _ := json.Marshal(m)
		return b
	}
	for _, bad := range []struct {
		name, code, detail string
		file               []byte
	}{
		{"a menu saved as text", "CLOUD_KEY_NOT_JSON", "not a JSON file", []byte("ramen,900\ngyoza,450\n")},
		{"a photo read as text", "CLOUD_KEY_NOT_JSON", "not a JSON file", []byte("\ufffd\ufffd\ufffd\ufffd JFIF \ufffd")},
		{"an app's google-services.json", "CLOUD_KEY_NOT_SERVICE_ACCOUNT", `no "type"`,
			[]byte(`{"project_info":{"project_number":"123","project_id":"` + cloudProject + `"},"client":[]}`)},
		{"a user's login file", "CLOUD_KEY_NOT_SERVICE_ACCOUNT", `type "authorized_user"`,
			[]byte(`{"type":"authorized_user","client_id":"x","client_secret":"y","refresh_token":"z"}`)},
		{"a key without its private key", "CLOUD_KEY_INCOMPLETE", "lacks private_key", edit(good, func(m map[string]any) { delete(m, "private_key") })},
		{"a key without its project", "CLOUD_KEY_INCOMPLETE", "lacks project_id", edit(good, func(m map[string]any) { delete(m, "project_id") })},
		{"a damaged private key", "CLOUD_KEY_INCOMPLETE", "private_key: not PEM encoded", edit(good, func(m map[string]any) { m["private_key"] = "-----BEGIN PRIVATE KEY-----\nAAAA" })},
		{"a key without Firestore rights", "CLOUD_KEY_NO_ACCESS", "PermissionDenied", noRights},
	} {
		for k, lang := range []string{"ja", "en"} {
			r := c.putKey((li+k)%3, lang, bad.file)
			var e refusal
			r.json(t, &e)
			want := httpapi.Message(bad.code, lang == "en")
			if r.Status != 400 || e.ReasonCode != bad.code || e.Field != "keyFile" || e.Message != want || !strings.Contains(e.Details, bad.detail) {
				t.Fatalf("%s (%s): %d %s, want 400 %s with %q and details with %q", bad.name, lang, r.Status, r.Body, bad.code, want, bad.detail)
			}
		}
	}
	c.everyPage("nothing saved after the refusals", func(p cloudPage) bool { return p.Source == "none" && p.State == "off" })

	// ---- a good key, uploaded to a follower, syncs within seconds
	start := time.Now()
	r := c.putKey(follower, "ja", good)
	var saved cloudPage
	r.json(t, &saved)
	if r.Status != 200 || saved.Source != "console" || str(saved.Checked) != "written" || str(saved.ProjectID) != cloudProject ||
		str(saved.ClientEmail) != "sync@"+cloudProject+".iam.gserviceaccount.com" || saved.KeyID == nil {
		t.Fatalf("PUT the good key: %d %s", r.Status, r.Body)
	}
	after := c.order("A1")
	waitFor(t, "both orders in Firestore", 30*time.Second, func() bool {
		d := cloudDocs(t, emu.HostPort(), shop)
		return d[before] == "ACCEPTED" && d[after] == "ACCEPTED"
	})
	t.Logf("key saved to both orders in Firestore: %v", time.Since(start).Round(time.Millisecond))
	c.everyPage("on, synced, on every box", func(p cloudPage) bool {
		return p.Source == "console" && p.State == "on" && p.Online && p.LastSyncAt != nil && p.LastError == nil
	})
	// A change travels too.
	c.mustStaff(other, "PATCH", "/api/staff/orders/"+after, map[string]string{"status": "COOKING"})
	waitFor(t, "the status change in Firestore", 30*time.Second, func() bool { return cloudDocs(t, emu.HostPort(), shop)[after] == "COOKING" })

	// ---- switching off stops the sync
	r = c.call(other, "DELETE", "/api/staff/cloud", "en", nil)
	var off cloudPage
	r.json(t, &off)
	if r.Status != 200 || off.Source != "none" || off.State != "off" {
		t.Fatalf("DELETE: %d %s", r.Status, r.Body)
	}
	c.everyPage("off on every box", func(p cloudPage) bool { return p.Source == "none" && p.State == "off" })
	c.mustStaff(follower, "PATCH", "/api/staff/orders/"+after, map[string]string{"status": "READY"})
	unsynced := c.order("U1")
	// The rows go (the outbox is drained without a cloud), and nothing of
	// them reached Firestore.
	c.everyPage("the outbox drained", func(p cloudPage) bool { return p.Pending == 0 })
	docs := cloudDocs(t, emu.HostPort(), shop)
	if _, there := docs[unsynced]; there || docs[after] != "COOKING" || len(docs) != 2 {
		t.Fatalf("after switching off, Firestore holds %v: want only %s and %s, %s still COOKING", docs, before, after, after)
	}

	// ---- no internet: saved anyway, synced once it is back
	emu.Stop()
	r = c.putKey(li, "en", good)
	r.json(t, &saved)
	if r.Status != 200 || str(saved.Checked) != "unconfirmed" || saved.State != "waiting" {
		t.Fatalf("PUT without internet: %d %s, want saved unconfirmed, waiting", r.Status, r.Body)
	}
	offline := c.order("O1")
	c.everyPage("waiting for the internet, with the reason", func(p cloudPage) bool {
		return p.State == "waiting" && str(p.Problem) == "offline" && p.LastError != nil && p.Pending > 0
	})
	if err := emu.Restart(); err != nil {
		t.Fatal(err)
	}
	// The emulator comes back empty: what must arrive is every order of
	// the open tables (queued when the key was saved) and the new one.
	waitFor(t, "the orders in Firestore once the internet is back", 60*time.Second, func() bool {
		d := cloudDocs(t, emu.HostPort(), shop)
		return d[offline] == "ACCEPTED" && d[unsynced] == "ACCEPTED" && d[after] == "READY" && d[before] == "ACCEPTED"
	})
	c.everyPage("on again", func(p cloudPage) bool { return p.State == "on" && p.Pending == 0 })

	// ---- the key is nowhere it must not be
	r = c.call(follower, "GET", "/api/staff/locks?prefix=cloudsync:", "en", nil)
	if r.Status != 200 || !strings.Contains(string(r.Body), "cloudsync:setting") || strings.Contains(string(r.Body), "sealed") {
		t.Fatalf("the setting as the locks page shows it: %d %s", r.Status, r.Body)
	}
	c.call(other, "GET", "/api/cluster/status", "en", nil)
	backup := c.call(other, "GET", "/api/staff/backup", "en", nil)
	if backup.Status != 200 || !bytes.Contains(backup.Body, []byte("cloudsync:setting")) {
		t.Fatalf("backup: %d, %d bytes, holding the setting: %v", backup.Status, len(backup.Body), bytes.Contains(backup.Body, []byte("cloudsync:setting")))
	}
	logs := c.logs.String()
	if !strings.Contains(logs, "cloud sync") {
		t.Fatalf("the captured log has no cloud sync line (%d bytes): the capture does not work", len(logs))
	}
	noKey := func(where string, data []byte) {
		t.Helper()
		for _, p := range pieces {
			if bytes.Contains(data, []byte(p)) {
				t.Fatalf("the key is in %s", where)
			}
		}
		if bytes.Contains(data, []byte("PRIVATE KEY")) {
			t.Fatalf("a private key is in %s", where)
		}
	}
	for _, p := range pieces { // the search finds the key where it is
		if !bytes.Contains(good, []byte(p)) && !bytes.Contains(noRights, []byte(p)) {
			t.Fatalf("piece %q is in neither key", p)
		}
	}
	for i, a := range c.answers {
		noKey(fmt.Sprintf("answer %d", i), a)
	}
	noKey("the backup", backup.Body)
	noKey("the log", []byte(logs))
	for i, cfg := range c.c.Configs {
		files := 0
		err := filepath.WalkDir(cfg.DataDir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			files++
			noKey(fmt.Sprintf("box %d's %s", i, p), b)
			return nil
		})
		if err != nil || files < 3 {
			t.Fatalf("box %d's data directory: %d files, %v", i, files, err)
		}
	}
	if os.Getenv("MO_SHOW_LOG") != "" {
		t.Log(logs)
	}
	t.Logf("the key looked for in %d answers, a %d-byte backup, %d bytes of log and every box's data directory", len(c.answers), len(backup.Body), len(logs))
}

// A box whose config file enables the sync shows it and leaves it to the
// file: the page can neither set nor switch off a key there.
func TestCloudPageFileWins(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nobody := l.Addr().String() // nothing answers there: the file's sync waits
	l.Close()
	c := startCloudPageStore(t, nobody, func(f *orders.FileConfig) {
		f.Firestore.Enabled, f.Firestore.ProjectID = true, "file-project"
	})
	c.everyPage("set in the file", func(p cloudPage) bool { return p.Source == "file" && str(p.ProjectID) == "file-project" })
	key := emulatortest.ServiceAccountKey(t, cloudProject, "sync@"+cloudProject+".iam.gserviceaccount.com")
	for _, lang := range []string{"ja", "en"} {
		for _, r := range []resp{c.putKey(0, lang, key), c.call(1, "DELETE", "/api/staff/cloud", lang, nil)} {
			var e refusal
			r.json(t, &e)
			if r.Status != 409 || e.ReasonCode != "CLOUD_SET_IN_FILE" || e.Message != httpapi.Message("CLOUD_SET_IN_FILE", lang == "en") {
				t.Fatalf("%s: %d %s", lang, r.Status, r.Body)
			}
		}
	}
	c.everyPage("still the file's", func(p cloudPage) bool { return p.Source == "file" && p.ClientEmail == nil })
	// Without a login, nothing.
	if r := c.do(0, "GET", "/api/staff/cloud", nil, nil); r.Status != 401 {
		t.Fatalf("without a login: %d", r.Status)
	}
}
