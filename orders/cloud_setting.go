package orders

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"regexp"
	"strings"

	"masterorder/kv"
	"masterorder/orders/store"
	"masterorder/raftfsm"
)

// The cloud setting from the Cloud page: the Firebase project's service
// account key, replicated to every box through the log so that whichever
// box leads can sync. The box that takes the upload checks the key (a
// test write) and seals it; Apply only stores the sealed bytes. The key
// is sealed with AES-256-GCM under a key derived (HKDF-SHA256) from the
// staff token secret: every box of a store has that secret in its config
// file (tokens from one box work on all), and neither a backup nor a
// snapshot nor the Raft log holds it, so the key is never in their plain
// text. `masterorder rotate-secrets` replaces the secret: a key sealed
// under the old one can no longer be opened, and the page asks for the
// file again. A setting in masterorder.toml ([firestore] enabled) wins
// over this one on the boxes whose file sets it (cloudSource).

// CmdCloudSetting switches the Cloud page's sync on (with a sealed key)
// or off.
const CmdCloudSetting raftfsm.CommandType = 46

// How the test write went when the key was saved.
const (
	checkWritten     = "written"     // Firestore took the test write
	checkUnconfirmed = "unconfirmed" // no answer (no internet): saved, tried when online
)

type cloudSettingCmd struct {
	On bool `json:"on"`
	// Sealed is the key file, sealed (sealCloudKey); never answered.
	Sealed      []byte `json:"sealed,omitempty"`
	ProjectID   string `json:"projectId,omitempty"`
	ClientEmail string `json:"clientEmail,omitempty"`
	KeyID       string `json:"keyId,omitempty"` // the key's private_key_id: names it, opens nothing
	SavedAt     int64  `json:"savedAt,omitempty"`
	Checked     string `json:"checked,omitempty"`
}

var cloudProjectRe = regexp.MustCompile(`^[a-z0-9][a-z0-9.:-]{0,99}$`)

// maxSealedKey bounds a sealed key: a key file is about 2.4 KB.
const maxSealedKey = 16 << 10

func (c cloudSettingCmd) valid() bool {
	if !c.On {
		return len(c.Sealed) == 0 && c.ProjectID == "" && c.ClientEmail == "" && c.KeyID == "" && c.SavedAt == 0 && c.Checked == ""
	}
	return len(c.Sealed) > sealOverhead && len(c.Sealed) <= maxSealedKey && cloudProjectRe.MatchString(c.ProjectID) &&
		validText(c.ClientEmail, 254, true) && strings.Contains(c.ClientEmail, "@") && validText(c.KeyID, 128, false) &&
		(c.Checked == checkWritten || c.Checked == checkUnconfirmed)
}

// shown is the setting as answered: everything but the sealed key.
func (c cloudSettingCmd) shown() cloudSettingCmd {
	c.Sealed = nil
	return c
}

// applyCloudSetting stores the setting (or removes it), forgets the state
// and last sync of the previous one, and, when switching on, queues every
// active order so the cloud shows the open tables at once. The leader's
// cloud worker hears of it (the event) and runs what it says.
func applyCloudSetting(ctx *raftfsm.ApplyContext, tx *kv.Tx, c cloudSettingCmd) ([]byte, error) {
	if c.On {
		if err := tx.Put(keyCloudSetting, mustJSON(c), 0); err != nil {
			return nil, err
		}
		if err := store.QueueActiveOrders(ctx.DB); err != nil {
			return nil, err
		}
	} else if _, err := tx.Delete(keyCloudSetting); err != nil {
		return nil, err
	}
	for _, k := range []string{keyCloudState, keyCloudLastSync} {
		if _, err := tx.Delete(k); err != nil {
			return nil, err
		}
	}
	ctx.Emit(eventCloudSetting, nil)
	return ok(c.shown())
}

// eventCloudSetting tells the leader's cloud worker that the setting
// changed (publish).
const eventCloudSetting = "cloud.setting"

// cloudSetting is the replicated setting on this box and the index that
// wrote it; nil when the page has not switched the cloud on.
func (s *Service) cloudSetting() (*cloudSettingCmd, uint64) {
	e, live, err := s.node.KV().Get(keyCloudSetting)
	if err != nil || !live {
		return nil, 0
	}
	var c cloudSettingCmd
	if json.Unmarshal(e.Value, &c) != nil || !c.valid() || !c.On {
		return nil, 0
	}
	return &c, e.Revision
}

// ---- sealing ----

// cloudSealer seals service account keys for the boxes of one store.
type cloudSealer struct {
	aead cipher.AEAD
	id   [8]byte // names the secret a key was sealed under
	shop []byte  // bound in: a key sealed for one shop opens for no other
}

const (
	sealVersion  = 1
	sealOverhead = 1 + 8 + 12 + 16 // version, secret id, nonce, GCM tag
)

// errSealedElsewhere: the key was sealed under another token secret (the
// secrets were rotated, or a backup was restored into another store).
var errSealedElsewhere = errors.New("the cloud key was saved under other secrets: choose the key file again")

func newCloudSealer(tokenSecret []byte, shopID string) (*cloudSealer, error) {
	key, err := hkdf.Key(sha256.New, tokenSecret, nil, "masterorder cloud key v1", 32)
	if err != nil {
		return nil, err
	}
	id, err := hkdf.Key(sha256.New, tokenSecret, nil, "masterorder cloud key v1 id", 8)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	s := &cloudSealer{aead: aead, shop: []byte(shopID)}
	copy(s.id[:], id)
	return s, nil
}

func (s *cloudSealer) seal(plain []byte) []byte {
	out := append([]byte{sealVersion}, s.id[:]...)
	nonce := make([]byte, s.aead.NonceSize())
	rand.Read(nonce)
	out = append(out, nonce...)
	return s.aead.Seal(out, nonce, plain, s.shop)
}

func (s *cloudSealer) open(sealed []byte) ([]byte, error) {
	if len(sealed) <= sealOverhead || sealed[0] != sealVersion {
		return nil, errors.New("the saved cloud key is damaged")
	}
	if !bytes.Equal(sealed[1:9], s.id[:]) {
		return nil, errSealedElsewhere
	}
	nonce, ct := sealed[9:9+s.aead.NonceSize()], sealed[9+s.aead.NonceSize():]
	plain, err := s.aead.Open(nil, nonce, ct, s.shop)
	if err != nil {
		return nil, errors.New("the saved cloud key is damaged")
	}
	return plain, nil
}
