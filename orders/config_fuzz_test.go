package orders

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"

	"masterorder/node"
)

const fuzzBaseConfig = `node_id = "a"
shop_id = "ramen-taro"
data_dir = "/var/lib/masterorder"
http_addr = "192.168.1.10:8080"
raft_addr = "192.168.1.10:9080"
cluster_secret = "0123456789abcdef0123456789abcdef"
[[peers]]
id = "a"
raft_addr = "192.168.1.10:9080"
http_addr = "192.168.1.10:8080"
[[peers]]
id = "b"
raft_addr = "192.168.1.11:9080"
http_addr = "192.168.1.11:8080"
[staff]
password_hash = "$2a$10$abcdefghijklmnopqrstuv"
token_secret = "abababababababababababababababababababababababababababababababab"
token_ttl = "12h"
[tls]
ca_file = "/etc/masterorder/tls/ca.pem"
cert_file = "/etc/masterorder/tls/a.pem"
key_file = "/etc/masterorder/tls/a-key.pem"
[raft]
election_timeout = "1s"
[admission]
cooldown = "3s"
[log]
level = "info"
`

// FuzzParseConfig: ParseConfig never panics; it either returns a
// *node.ConfigError naming a setting, or a config that validates and that
// survives a write and re-read unchanged (what `init` writes is what
// `run` reads). Seeds: testdata/fuzz and the cases below.
func FuzzParseConfig(f *testing.F) {
	f.Add(fuzzBaseConfig)
	f.Add(strings.Replace(fuzzBaseConfig, `cooldown = "3s"`, `cooldown = "-1s"`, 1))
	f.Add(strings.Replace(fuzzBaseConfig, `election_timeout = "1s"`, `election_timeout = 5`, 1))
	f.Add(fuzzBaseConfig + "[firestore]\nenabled = true\nemulator_host = \"127.0.0.1:8681\"\nproject_id = \"demo\"\n")
	f.Add(fuzzBaseConfig + "bogus = 1\n")
	f.Add(strings.Replace(fuzzBaseConfig, `node_id = "a"`, `node_id = "a\nb"`, 1))
	f.Add("node_id = \"a\"\n[[peers]]\nid = [1, 2]\n")
	f.Add("[staff]\ntoken_ttl = \"9999999999999999h\"\n")
	f.Add("")
	f.Add("\x00")
	f.Add("a = \"\\uD800\"")
	f.Add("[raft]\nmax_append_entries = 9223372036854775807\nsnapshot_threshold = -1\n")
	f.Fuzz(func(t *testing.T, raw string) {
		cfg, err := ParseConfig([]byte(raw))
		if err != nil {
			var ce *node.ConfigError
			if !errors.As(err, &ce) || ce.Setting == "" {
				t.Fatalf("error without a setting name: %v", err)
			}
			return
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("accepted a config that does not validate: %v", err)
		}
		out, err := toml.Marshal(cfg)
		if err != nil {
			t.Fatalf("cannot write back an accepted config: %v", err)
		}
		again, err := ParseConfig(out)
		if err != nil {
			t.Fatalf("written config does not load: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(again, cfg) {
			t.Fatalf("config changed through a write and re-read:\n%+v\n%+v", cfg, again)
		}
	})
}
