package orders

import (
	"errors"
	"testing"

	"masterorder/node"
)

// public_url is scheme, host and optional port, nothing else: the apps'
// paths are appended to it.
func TestPublicURLSetting(t *testing.T) {
	base := minimalConfigTOML
	for _, good := range []string{"http://order.local:8080", "http://order.local:8080/", "https://192.168.1.50"} {
		c, err := ParseConfig([]byte(`public_url = "` + good + `"` + "\n" + base))
		if err != nil || c.PublicURL != good {
			t.Errorf("%s: %v", good, err)
		}
	}
	for _, bad := range []string{"order.local:8080", "ftp://order.local", "http://", "http://order.local/guest", "http://a@order.local", "http://order.local?x=1"} {
		_, err := ParseConfig([]byte(`public_url = "` + bad + `"` + "\n" + base))
		var ce *node.ConfigError
		if !errors.As(err, &ce) || ce.Setting != "public_url" {
			t.Errorf("%s: got %v", bad, err)
		}
	}
}
