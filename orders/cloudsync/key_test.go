package cloudsync

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"masterorder/orders/cloudsync/emulatortest"
)

// Each kind of file an owner might pick instead of a key is named, and
// the words never quote the file.
func TestParseKey(t *testing.T) {
	good := serviceAccountJSON(t, "shop-project", nil)
	k, err := ParseKey([]byte(good), true)
	if err != nil {
		t.Fatal(err)
	}
	if k.ProjectID != "shop-project" || k.ClientEmail != "sync@shop-project.iam.gserviceaccount.com" || k.PrivateKeyID == "" {
		t.Fatalf("key %+v", k)
	}
	if s := fmt.Sprintf("%+v %v", k, k); strings.Contains(s, "PRIVATE KEY") {
		t.Fatalf("a Key prints its private key: %s", s)
	}
	secret := "MIIEvQ-not-shown"
	cases := []struct {
		name    string
		file    string
		problem KeyProblem
		detail  string
	}{
		{"a picture", "\x89PNG\r\n\x1a\n" + secret, KeyNotJSON, "not a JSON file"},
		{"text", "hello " + secret, KeyNotJSON, "not a JSON file"},
		{"an empty file", "", KeyNotJSON, "not a JSON file"},
		{"an app's google-services.json", `{"project_info":{"project_number":"1","project_id":"p"},"client":[{"api_key":[{"current_key":"` + secret + `"}]}]}`, KeyNotServiceAccount, `no "type"`},
		{"a user's login", `{"type":"authorized_user","client_id":"x","client_secret":"` + secret + `","refresh_token":"z"}`, KeyNotServiceAccount, `type "authorized_user"`},
		{"a JSON list", `["` + secret + `"]`, KeyNotServiceAccount, "not a key file"},
		{"a number for a name", `{"type":"service_account","project_id":12}`, KeyNotServiceAccount, "not a key file"},
		{"no private key", serviceAccountJSON(t, "p", func(m map[string]any) { delete(m, "private_key") }), KeyIncomplete, "lacks private_key"},
		{"no email, no project", serviceAccountJSON(t, "", func(m map[string]any) { delete(m, "client_email") }), KeyIncomplete, "lacks client_email, project_id"},
		{"a damaged private key", serviceAccountJSON(t, "p", func(m map[string]any) {
			m["private_key"] = "-----BEGIN PRIVATE KEY-----\n" + secret + "\n-----END PRIVATE KEY-----\n"
		}), KeyIncomplete, "private_key: not PEM encoded"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseKey([]byte(c.file), true)
			var ke *KeyError
			if !errors.As(err, &ke) || ke.Problem != c.problem || !strings.Contains(ke.Detail, c.detail) {
				t.Fatalf("ParseKey = %v, want problem %d with %q", err, c.problem, c.detail)
			}
			if strings.Contains(ke.Detail, secret) {
				t.Fatalf("the words quote the file: %q", ke.Detail)
			}
		})
	}
}

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		err  error
		want Problem
	}{
		{nil, ""},
		{status.Error(codes.Unavailable, "connection refused"), ProblemOffline},
		{fmt.Errorf("writing: %w", status.Error(codes.DeadlineExceeded, "slow")), ProblemOffline},
		{fmt.Errorf("no answer: %w", context.DeadlineExceeded), ProblemOffline},
		{status.Error(codes.PermissionDenied, "Missing or insufficient permissions."), ProblemNoAccess},
		{status.Error(codes.Unauthenticated, "invalid JWT"), ProblemNoAccess},
		{status.Error(codes.NotFound, "The database (default) does not exist for project p"), ProblemNoDatabase},
		{status.Error(codes.InvalidArgument, "bad"), ProblemOther},
		{errors.New("something else"), ProblemOther},
	} {
		if got := Classify(c.err); got != c.want {
			t.Errorf("Classify(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}

// The test write goes through the real client with the key's own tokens:
// the emulator's rules let the sync account write and refuse another
// account, as Firestore refuses a key without rights; with the emulator
// gone the write gets no answer, which is told apart from a refusal.
func TestCheckAgainstTheEmulator(t *testing.T) {
	e := emulatortest.NewWithRules(t, emulatortest.WritersRules("sync@"))
	shop := testShop(t)
	cfg := Config{ShopID: shop, EmulatorHost: e.HostPort(), CallTimeout: 5 * time.Second}
	check := func(email string) error {
		t.Helper()
		c := cfg
		c.Key = emulatortest.ServiceAccountKey(t, "demo-check", email)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		return Check(ctx, c)
	}
	if err := check("sync@demo-check.iam.gserviceaccount.com"); err != nil {
		t.Fatalf("the good key: %v", err)
	}
	// The write really happened, and touched only its field.
	r := reader(t, e.HostPort(), "demo-check")
	snap, err := r.Doc("shops/" + shop).Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := snap.Data()[FieldCheckedAt].(time.Time); !ok || len(snap.Data()) != 1 {
		t.Fatalf("shops/%s = %v, want only %s, a time", shop, snap.Data(), FieldCheckedAt)
	}

	err = check("reader@demo-check.iam.gserviceaccount.com")
	if Classify(err) != ProblemNoAccess {
		t.Fatalf("a key without rights: %v (%q), want %q", err, Classify(err), ProblemNoAccess)
	}

	e.Stop()
	err = check("sync@demo-check.iam.gserviceaccount.com")
	if Classify(err) != ProblemOffline {
		t.Fatalf("with the emulator gone: %v (%q), want %q", err, Classify(err), ProblemOffline)
	}

	// A file that is no key never reaches the network.
	c := cfg
	c.Key = []byte("not a key")
	var ke *KeyError
	if err := Check(context.Background(), c); !errors.As(err, &ke) || ke.Problem != KeyNotJSON {
		t.Fatalf("Check of a non-key = %v", err)
	}
}

// A Syncer with a key (not the owner token) writes orders through the
// emulator's rules; one whose key lacks the rights reports it as such.
func TestSyncerWithAKey(t *testing.T) {
	e := emulatortest.NewWithRules(t, emulatortest.WritersRules("sync@"))
	shop := testShop(t)
	cfg := testConfig(e.HostPort(), shop)
	cfg.ProjectID = ""
	cfg.Key = emulatortest.ServiceAccountKey(t, "demo-keyed", "sync@demo-keyed.iam.gserviceaccount.com")
	ob := newMemOutbox()
	ob.add(7, OpUpsert, orderDoc(7, "s1", "T1", "ACCEPTED"))
	run := startSyncer(t, cfg, ob)
	if run.s.ProjectID() != "demo-keyed" {
		t.Fatalf("project %q, want the key's", run.s.ProjectID())
	}
	eventually(t, 20*time.Second, "the order synced", func() bool { return ob.pending() == 0 })
	checkCollection(t, reader(t, e.HostPort(), "demo-keyed"), shop, ob.expected(t))

	bad := cfg
	bad.Key = emulatortest.ServiceAccountKey(t, "demo-keyed", "reader@demo-keyed.iam.gserviceaccount.com")
	ob2 := newMemOutbox()
	ob2.add(8, OpUpsert, orderDoc(8, "s1", "T1", "ACCEPTED"))
	run2 := startSyncer(t, bad, ob2)
	eventually(t, 20*time.Second, "the refusal in the status", func() bool { return run2.s.Status().Problem == ProblemNoAccess })
	if st := run2.s.Status(); st.LastError == nil || !strings.Contains(*st.LastError, "PermissionDenied") || ob2.pending() != 1 {
		t.Fatalf("status %+v, pending %d", st, ob2.pending())
	}
}
