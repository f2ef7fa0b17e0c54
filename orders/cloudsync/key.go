package cloudsync

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"

	"cloud.google.com/go/auth"
	"cloud.google.com/go/auth/credentials"
	vkit "cloud.google.com/go/firestore/apiv1"
)

// Key is a checked service-account key file: what Firebase's "Generate
// new private key" downloads. Only its names are exported; the private
// key stays inside (a Key is never logged or answered).
type Key struct {
	ProjectID    string
	ClientEmail  string
	PrivateKeyID string // Google's id of the key (not secret: the console lists it)
	raw          []byte
}

// KeyProblem is what is wrong with a file offered as a key.
type KeyProblem int

const (
	KeyNotJSON           KeyProblem = iota + 1 // not a JSON object at all
	KeyNotServiceAccount                       // JSON, but another kind of file (an app's google-services.json, a user's login)
	KeyIncomplete                              // a service account key missing a field, or with a private key that does not parse
)

// KeyError says why a file is not a usable key. Detail never quotes the
// file's contents.
type KeyError struct {
	Problem KeyProblem
	Detail  string
}

func (e *KeyError) Error() string { return e.Detail }

// serviceAccountFile is the part of a key file that is checked.
type serviceAccountFile struct {
	Type         string `json:"type"`
	ProjectID    string `json:"project_id"`
	PrivateKeyID string `json:"private_key_id"`
	ClientEmail  string `json:"client_email"`
	PrivateKey   string `json:"private_key"`
}

// ParseKey checks b as a service-account key file. requireProject: the
// file must name its project (nothing else will).
func ParseKey(b []byte, requireProject bool) (Key, error) {
	var f serviceAccountFile
	if err := json.Unmarshal(b, &f); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			// JSON, but not an object of strings: some other file.
			return Key{}, &KeyError{KeyNotServiceAccount, "a JSON file, but not a key file (field " + typeErr.Field + " is a " + typeErr.Value + ")"}
		}
		return Key{}, &KeyError{KeyNotJSON, "not a JSON file"}
	}
	if f.Type != "service_account" {
		what := `no "type"`
		if f.Type != "" {
			what = fmt.Sprintf("type %q", f.Type)
		}
		return Key{}, &KeyError{KeyNotServiceAccount, what + `, want a service account key ("type": "service_account")`}
	}
	var missing []string
	for _, m := range []struct{ name, v string }{{"client_email", f.ClientEmail}, {"private_key", f.PrivateKey}, {"project_id", f.ProjectID}} {
		if m.v == "" && (m.name != "project_id" || requireProject) {
			missing = append(missing, m.name)
		}
	}
	if len(missing) > 0 {
		return Key{}, &KeyError{KeyIncomplete, "lacks " + strings.Join(missing, ", ")}
	}
	if err := checkPrivateKey(f.PrivateKey); err != nil {
		return Key{}, &KeyError{KeyIncomplete, "private_key: " + err.Error()}
	}
	return Key{ProjectID: f.ProjectID, ClientEmail: f.ClientEmail, PrivateKeyID: f.PrivateKeyID, raw: b}, nil
}

func checkPrivateKey(s string) error {
	block, _ := pem.Decode([]byte(s))
	if block == nil {
		return errors.New("not PEM encoded")
	}
	if _, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
		return nil
	}
	if _, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return nil
	}
	return errors.New("not a PKCS#8 or PKCS#1 private key")
}

// credentials are the key's tokens: a JWT the box signs itself with the
// private key for Firestore's scope, as the Firestore library does when
// it finds a service account (no token server is asked, so the only host
// the boxes need is Firestore's).
func (k Key) credentials() (*auth.Credentials, error) {
	creds, err := credentials.NewCredentialsFromJSON(credentials.ServiceAccount, k.raw, &credentials.DetectOptions{
		Scopes:           vkit.DefaultAuthScopes(),
		UseSelfSignedJWT: true,
	})
	if err != nil {
		// The library's words can quote the file; ours do not.
		return nil, &KeyError{KeyIncomplete, "the key file cannot be used to sign in"}
	}
	return creds, nil
}

// keyTokens sends a key's tokens over a connection without TLS (to an
// emulator, which judges them by its security rules as Firestore would).
type keyTokens struct{ creds *auth.Credentials }

func (k keyTokens) GetRequestMetadata(ctx context.Context, _ ...string) (map[string]string, error) {
	tok, err := k.creds.Token(ctx)
	if err != nil {
		return nil, err
	}
	return map[string]string{"authorization": "Bearer " + tok.Value}, nil
}

func (keyTokens) RequireTransportSecurity() bool { return false }
