package deptest

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "masterorder"

// rule is one package's place in the graph.
type rule struct {
	// may lists the packages of the module it imports (paths below the
	// module; "" is the root). Test files are not judged: they may import
	// test helpers and the packages under test.
	may []string
	// why says the package's place, for the message when it breaks the rule.
	why string
}

// rules is the import graph, the same as docs/architecture.md's "Import
// graph". Every package of the module has a line; every arrow the code
// has is listed, and none it lacks. A new package or a new arrow is a
// change of the architecture: make it here and in the document together.
var rules = map[string]rule{
	// The binary: main.go only calls the command line.
	"": {why: "the binary: main.go hands its arguments to the command line", may: []string{"cli"}},
	"cli": {why: "the command line: one file per command; it wires box, domain, setup, pages and bench",
		may: []string{"bench", "node", "node/lanname", "node/peerfind", "node/pki", "node/restart", "node/wallclock", "node/watchdog", "orders", "orders/staffauth", "setup", "setup/cluster", "setup/join", "ui", "update"}},

	// Setup mode: discover, claim, configure. It imports nothing of a
	// running member; only setup/cluster, the writer, knows node's and
	// orders' config types (setup/imports_test.go holds that for the
	// packages setup reaches indirectly too).
	"setup": {why: "setup mode: discovers, claims and configures a box before it runs as a member",
		may: []string{"httpapi", "node/atomicfile", "node/pki", "setup/cluster", "ui"}},
	"setup/cluster": {why: "the one writer of a cluster's files (CA, certificates, configs), for init and the wizard",
		may: []string{"node", "node/atomicfile", "node/pki", "orders", "orders/staffauth"}},
	"setup/join": {why: "a running member's side of setup: the console's add and replace, taking a setup-mode box into the cluster",
		may: []string{"httpapi", "node", "node/pki", "orders", "setup", "setup/cluster"}},

	// The domain on the box.
	"orders": {why: "the domain: commands, handlers, the API; it runs on node, never the reverse, and serves no pages (the caller passes ui in)",
		may: []string{"httpapi", "kv", "node", "orders/admission", "orders/backoff", "orders/cloudsync", "orders/menuimage",
			"orders/printing/escpos", "orders/staffauth", "orders/store", "orders/stream", "raftfsm"}},
	"orders/admission":       {why: "pure request checks of a guest order", may: []string{"httpapi"}},
	"orders/staffauth":       {why: "staff passwords, tokens, CSRF", may: []string{"httpapi"}},
	"orders/cloudsync":       {why: "the leader's push to Firestore", may: []string{"orders/backoff"}},
	"orders/backoff":         {why: "the wait between a sender's retries (leaf)"},
	"orders/menuimage":       {why: "menu pictures (pure, leaf)"},
	"orders/printing/escpos": {why: "ESC/POS tickets (pure, leaf)"},
	"orders/store":           {why: "SQLite schema and queries (leaf)"},
	"orders/stream":          {why: "kitchen event fan-out (leaf)"},

	// New versions from the console: a box's install, trial and commit,
	// and the leader's rolling update.
	"update": {why: "updating the store: bundles verified by RAUC, a box's install and trial, the leader's one-box-at-a-time rollout",
		may: []string{"httpapi", "node", "node/atomicfile"}},

	// The box.
	"node": {why: "one store box: Raft, HTTP server, forwarding, membership; it knows nothing of the domain",
		may: []string{"api", "httpapi", "kv", "node/atomicfile", "node/certrenew", "node/lanname", "node/peerfind", "node/pki", "node/restart", "node/tlsnet", "node/wallclock", "raftfsm"}},
	"node/lanname":                  {why: "the box's name on the LAN (leaf)"},
	"node/peerfind":                 {why: "a member's current address by its node id, over mDNS (leaf)"},
	"node/pki":                      {why: "cluster CA and certificates, the TLS files' names", may: []string{"node/atomicfile"}},
	"node/atomicfile":               {why: "the one writer of a box's small files (leaf)"},
	"node/certrenew":                {why: "the staff HTTPS certificate renewed from the cluster CA, and the certificates' status", may: []string{"node/pki"}},
	"node/restart":                  {why: "why a box last started: run marker and stop record (leaf)"},
	"node/wallclock":                {why: "the box's wall clock: forward only, its source, the last known time", may: []string{"node/atomicfile"}},
	"node/watchdog":                 {why: "sd_notify: ready, and the unit's watchdog fed while the box serves (leaf)"},
	"node/tlsnet":                   {why: "mutual-TLS stream layer (leaf)"},
	"kv":                            {why: "coordination KV inside Apply", may: []string{"raftfsm"}},
	"raftfsm":                       {why: "the generic state machine: it knows no command", may: []string{"raftfsm/boltcheck"}},
	"raftfsm/boltcheck":             {why: "a bbolt file checked from its bytes (leaf)"},
	"httpapi":                       {why: "the API's error answers (leaf)"},
	"api":                           {why: "the HTTP contract (leaf)"},
	"ui":                            {why: "the embedded web apps", may: []string{"httpapi"}},
	"bench":                         {why: "the load generator: an HTTP client of the API that shares no code with the server"},
	"bench/powercut":                {why: "a FUSE file system that loses what a power cut loses, for tests (leaf)"},
	"ui/browsertest":                {why: "browser tests (its code is in test files)"},
	"node/nodetest":                 {why: "in-process clusters for tests", may: []string{"node", "node/pki"}},
	"api/apitest":                   {why: "the contract checker for tests", may: []string{"api"}},
	"setup/setuptest":               {why: "setup's test helpers", may: []string{"api/apitest"}},
	"orders/orderstest":             {why: "in-process clusters with the domain, for tests", may: []string{"api/apitest", "node", "node/nodetest", "orders", "ui"}},
	"orders/printing/printertest":   {why: "a TCP printer for tests", may: []string{"orders/printing/escpos"}},
	"orders/cloudsync/emulatortest": {why: "the Firestore emulator for tests (leaf)"},
	"internal/deptest":              {why: "these rules (its code is in test files)"},
	"internal/filestate":            {why: "a stopped box's FSM files read as comparable text, for tests (leaf)"},
	"internal/chromiumtest":         {why: "what the browser tests' harnesses share about the Chromium they start (leaf)"},
}

// pkg is what go list says of one package.
type pkg struct {
	ImportPath string
	Imports    []string
}

// modulePackages lists the module's packages with their imports of the
// module, by path below the module.
func modulePackages(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports", module+"/...")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string][]string{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		var own []string
		for _, imp := range p.Imports {
			if rel, ok := below(imp); ok {
				own = append(own, rel)
			}
		}
		rel, _ := below(p.ImportPath)
		pkgs[rel] = own
	}
	if len(pkgs) == 0 {
		t.Fatal("go list found no package of the module")
	}
	return pkgs
}

// below is path's place below the module ("" for the root), false for a
// path outside it.
func below(path string) (string, bool) {
	if path == module {
		return "", true
	}
	rel, ok := strings.CutPrefix(path, module+"/")
	return rel, ok
}

func name(rel string) string {
	if rel == "" {
		return module
	}
	return module + "/" + rel
}

const where = "internal/deptest/deptest_test.go and the import graph in docs/architecture.md"

func TestImportsFollowTheRules(t *testing.T) {
	pkgs := modulePackages(t)
	for rel, imports := range pkgs {
		r, known := rules[rel]
		if !known {
			t.Errorf("%s is not in the import rules: add it to the table (%s) with the packages of the module it may import", name(rel), where)
			continue
		}
		for _, imp := range imports {
			if !slices.Contains(r.may, imp) {
				t.Errorf("%s imports %s, which the import rules do not allow.\n  %s: %s.\n  It may import: %s.\n  Drop the import, or if the architecture changes, change the rule in %s together.",
					name(rel), name(imp), name(rel), r.why, list(r.may), where)
			}
		}
		for _, m := range r.may {
			if !slices.Contains(imports, m) {
				t.Errorf("the import rules let %s import %s, which it does not: remove the arrow from the table (%s)", name(rel), name(m), where)
			}
		}
	}
	for rel, r := range rules {
		if _, ok := pkgs[rel]; !ok {
			t.Errorf("the import rules list %s, which is no package of the module: remove it from the table (%s)", name(rel), where)
		}
		for _, m := range r.may {
			if _, ok := rules[m]; !ok {
				t.Errorf("the import rules let %s import %s, which the table does not list", name(rel), name(m))
			}
		}
	}
}

func list(rels []string) string {
	if len(rels) == 0 {
		return "nothing of the module"
	}
	names := make([]string, len(rels))
	for i, r := range rels {
		names[i] = name(r)
	}
	return strings.Join(names, ", ")
}

// TestDocumentStatesTheGraph: docs/architecture.md's import graph (the
// fenced block after "## Import graph", one "package -> imports" line
// each) says what the table says.
func TestDocumentStatesTheGraph(t *testing.T) {
	f, err := os.Open("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc := map[string][]string{}
	section, block := false, false
	var last *string // the package an indented line continues
	add := func(rel, to string) {
		for _, f := range strings.Fields(to) {
			if f != "(nothing)" {
				doc[rel] = append(doc[rel], f)
			}
		}
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			section = line == "## Import graph"
		case section && strings.HasPrefix(line, "```"):
			block, last = !block, nil
		case !section || !block:
		case strings.Contains(line, "->"):
			from, to, _ := strings.Cut(line, "->")
			rel := strings.TrimSpace(from)
			if rel == module {
				rel = ""
			}
			if _, dup := doc[rel]; dup {
				t.Errorf("docs/architecture.md's import graph has two lines for %s", name(rel))
			}
			doc[rel] = []string{}
			last = &rel
			add(rel, to)
		case last != nil && strings.HasPrefix(line, " "):
			add(*last, line)
		default:
			last = nil // a heading line inside the block
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(doc) == 0 {
		t.Fatal(`docs/architecture.md has no import graph (a fenced block of "package -> imports" lines under "## Import graph")`)
	}
	for rel, r := range rules {
		got, ok := doc[rel]
		if !ok {
			t.Errorf("docs/architecture.md's import graph has no line for %s (the table has it)", name(rel))
			continue
		}
		want := slices.Sorted(slices.Values(r.may))
		if got = slices.Sorted(slices.Values(got)); !slices.Equal(got, want) {
			t.Errorf("docs/architecture.md says %s -> %s; the table says -> %s", name(rel), strings.Join(got, " "), strings.Join(want, " "))
		}
	}
	for rel := range doc {
		if _, ok := rules[rel]; !ok {
			t.Errorf("docs/architecture.md's import graph has a line for %s, which the table does not list", name(rel))
		}
	}
}
