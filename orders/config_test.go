package orders

import (
	"errors"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"masterorder/node"
)

func TestExampleConfigLoads(t *testing.T) {
	raw, err := os.ReadFile("../config.example.toml")
	if err != nil {
		t.Fatal(err)
	}
	// The example leaves the secrets empty on purpose; fill them to load.
	s := strings.Replace(string(raw), `password_hash = ""`, `password_hash = "$2a$10$abcdefghijklmnopqrstuv"`, 1)
	s = strings.Replace(s, `token_secret = ""`, `token_secret = "`+strings.Repeat("ab", 32)+`"`, 1)
	// Its placeholder cluster secret and empty [tls] are refused as shipped.
	if _, err := ParseConfig([]byte(s)); err == nil {
		t.Fatal("the example config loads with its placeholder secret and no TLS")
	}
	cfg, err := ParseConfig([]byte(loadableExample(t)))
	if err != nil {
		t.Fatalf("example config: %v", err)
	}
	if cfg.HTTPSAddr != "192.168.1.10:8443" || cfg.HTTP.AllowPlainStaff || cfg.Peers[0].HTTPSAddr == "" || cfg.Staff.KitchenTokenTTL.Hours() != 18 {
		t.Errorf("HTTPS settings: %q plain %v peer %q kitchen ttl %v", cfg.HTTPSAddr, cfg.HTTP.AllowPlainStaff, cfg.Peers[0].HTTPSAddr, cfg.Staff.KitchenTokenTTL)
	}
	if cfg.Admission.Cooldown.Seconds() != 3 || len(cfg.Peers) != 3 {
		t.Fatalf("unexpected values: %+v", cfg.Admission)
	}
}

// loadableExample is config.example.toml with its empty secrets and TLS
// files filled in, so that it loads.
func loadableExample(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile("../config.example.toml")
	if err != nil {
		t.Fatal(err)
	}
	r := strings.NewReplacer(
		`kitchen_password_hash = ""`, `kitchen_password_hash = ""`, // no kitchen login
		`password_hash = ""`, `password_hash = "$2a$10$abcdefghijklmnopqrstuv"`,
		`token_secret = ""`, `token_secret = "`+strings.Repeat("ab", 32)+`"`,
		`cluster_secret = "change-me-to-a-long-random-string"`, `cluster_secret = "`+strings.Repeat("cd", 16)+`"`,
		`ca_file = ""`, `ca_file = "/etc/masterorder/tls/ca.pem"`,
		`https_cert_file = ""`, `https_cert_file = ""`, // empty: cert_file's
		`https_key_file = ""`, `https_key_file = ""`,
		`cert_file = ""`, `cert_file = "/etc/masterorder/tls/a.pem"`,
		`key_file = ""`, `key_file = "/etc/masterorder/tls/a-key.pem"`,
	)
	return r.Replace(string(raw))
}

// The example names each setting once, commented out or not, so it never
// tells two stories about one setting (public_url once had a commented
// example near the top and its setting further down, with two comments);
// and every setting it names is one: uncommented, the file still loads.
func TestExampleConfigNamesEachSettingOnce(t *testing.T) {
	setting := regexp.MustCompile(`^(#\s*)?([a-z][a-z0-9_]*)\s*=`)
	table := ""
	first := map[string]int{} // table and setting → its line
	var uncommented []string
	for i, line := range strings.Split(loadableExample(t), "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "[") {
			table = trimmed
			if table == "[[peers]]" {
				table += strconv.Itoa(i) // each peer is a table of its own
			}
		}
		m := setting.FindStringSubmatch(trimmed)
		if m == nil {
			uncommented = append(uncommented, line)
			continue
		}
		if at, again := first[table+" "+m[2]]; again {
			t.Errorf("line %d names %s again (first named on line %d)", i+1, m[2], at)
		} else {
			first[table+" "+m[2]] = i + 1
		}
		uncommented = append(uncommented, strings.TrimPrefix(trimmed, m[1]))
	}
	if len(first) < 40 {
		t.Fatalf("found only %d settings in the example: the pattern no longer reads it", len(first))
	}
	if _, err := ParseConfig([]byte(strings.Join(uncommented, "\n"))); err != nil {
		t.Errorf("the example with its commented settings uncommented: %v", err)
	}
}

// minimalConfigTOML is the smallest config that loads: the tests change
// one setting of it at a time.
var minimalConfigTOML = `node_id = "a"
data_dir = "/tmp/x"
http_addr = "127.0.0.1:8080"
raft_addr = "127.0.0.1:9080"
cluster_secret = "0123456789abcdef0123"
[[peers]]
id = "a"
raft_addr = "127.0.0.1:9080"
http_addr = "127.0.0.1:8080"
[staff]
password_hash = "x"
token_secret = "` + strings.Repeat("ab", 32) + `"
[tls]
ca_file = "/etc/tls/ca.pem"
cert_file = "/etc/tls/a.pem"
key_file = "/etc/tls/a-key.pem"
`

func TestBadConfigNamesTheSetting(t *testing.T) {
	base := minimalConfigTOML
	if _, err := ParseConfig([]byte(base)); err != nil {
		t.Fatalf("base config: %v", err)
	}
	cases := map[string]string{
		"node_id":             strings.Replace(base, `node_id = "a"`, `node_id = "a b"`, 1),
		"http_addr":           strings.Replace(base, `http_addr = "127.0.0.1:8080"`, `http_addr = "nope"`, 1),
		"admission.cooldown":  base + "[admission]\ncooldown = \"soon\"\n",
		"bogus":               base + "bogus = 1\n",
		"peers":               strings.Replace(base, `id = "a"`, `id = "z"`, 1),
		"staff.password_hash": strings.Replace(base, `password_hash = "x"`, `password_hash = ""`, 1),
		// TLS fails closed: no [tls], half a [tls], a documented secret.
		"tls":            base[:strings.Index(base, "[tls]")],
		"tls ":           strings.Replace(base, `key_file = "/etc/tls/a-key.pem"`, ``, 1),
		"cluster_secret": strings.Replace(base, `cluster_secret = "0123456789abcdef0123"`, `cluster_secret = "change-me-to-a-long-random-string"`, 1),
	}
	for setting, raw := range cases {
		_, err := ParseConfig([]byte(raw))
		var ce *node.ConfigError
		if !errors.As(err, &ce) || !strings.Contains(ce.Setting, strings.TrimSpace(setting)) {
			t.Errorf("%s: got %v", setting, err)
		}
	}
}

// A checkout lock without a TTL would never lapse: checkout_lock_ttl = 0
// is refused (the CLI exits 2 on a ConfigError), and so is a tax rate
// outside 0..100.
func TestZeroCheckoutLockTTLAndBadTaxRateRefused(t *testing.T) {
	base := minimalConfigTOML
	for setting, raw := range map[string]string{
		"admission.checkout_lock_ttl": base + "[admission]\ncheckout_lock_ttl = \"0s\"\n",
		"shop.tax_rate_percent":       base + "[shop]\ntax_rate_percent = 101\n",
	} {
		_, err := ParseConfig([]byte(raw))
		var ce *node.ConfigError
		if !errors.As(err, &ce) || ce.Setting != setting {
			t.Errorf("%s: got %v, want a ConfigError naming it", setting, err)
		}
	}
	c, err := ParseConfig([]byte(base + "[shop]\ntax_rate_percent = 8\n"))
	if err != nil || c.Shop.TaxRate() != 8 {
		t.Fatalf("tax rate 8: %v %+v", err, c.Shop)
	}
	if c, _ := ParseConfig([]byte(base)); c.Shop.TaxRate() != 10 {
		t.Fatalf("default tax rate %d, want 10", c.Shop.TaxRate())
	}
}

// [shop] name: the owner's words, Japanese included, up to 100 characters;
// longer or with a control character, refused naming the setting.
func TestShopName(t *testing.T) {
	c, err := ParseConfig([]byte(minimalConfigTOML + "[shop]\nname = \"らーめん 田中\"\n"))
	if err != nil || c.Shop.Name != "らーめん 田中" {
		t.Fatalf("name: %v %+v", err, c.Shop)
	}
	for _, bad := range []string{strings.Repeat("田", 101), "a\\u0007b"} {
		_, err := ParseConfig([]byte(minimalConfigTOML + "[shop]\nname = \"" + bad + "\"\n"))
		var ce *node.ConfigError
		if !errors.As(err, &ce) || ce.Setting != "shop.name" {
			t.Errorf("name %q: got %v, want a ConfigError naming shop.name", bad, err)
		}
	}
}
