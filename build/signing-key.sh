#!/bin/bash
# The key that signs update bundles, and the keyring (its CA certificate)
# the image carries in /etc/rauc/keyring.pem. The key is never in the image,
# the repository or dist/.
#
#   build/signing-key.sh keyring     prints the keyring file's path
#   build/signing-key.sh cert|key    prints the signing certificate's / key's path
#
# KEY_DIR (default /var/lib/masterorder-build/dev-key) holds
#   keyring.pem        the CA certificate: what the boxes trust
#   signing.cert.pem   the signing certificate, issued by that CA
#   signing.key.pem    its private key (RAUC_KEY may name a PKCS#11 URI instead)
# When KEY_DIR has none, a development key is made there (EC P-256, a CA
# and a signer, "MasterOrder DEVELOPMENT"): good for tests, never for a
# release (docs/packaging.md, "The signing key").
set -euo pipefail
KEY_DIR=${KEY_DIR:-/var/lib/masterorder-build/dev-key}
what=${1:-keyring}
if [ ! -s "$KEY_DIR/keyring.pem" ]; then
  if [ -n "${RELEASE:-}" ]; then
    echo "signing-key.sh: RELEASE is set and $KEY_DIR has no keyring.pem: no development key for a release" >&2
    exit 1
  fi
  command -v openssl >/dev/null || { apt-get update -qq >/dev/null; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends openssl >/dev/null; }
  mkdir -p "$KEY_DIR"
  chmod 0700 "$KEY_DIR"
  t=$(mktemp -d)
  trap 'rm -rf "$t"' EXIT
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 36500 \
    -subj "/O=MasterOrder DEVELOPMENT/CN=MasterOrder DEVELOPMENT update CA" \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign \
    -keyout "$t/ca.key.pem" -out "$t/keyring.pem" 2>/dev/null
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -subj "/O=MasterOrder DEVELOPMENT/CN=MasterOrder DEVELOPMENT bundle signer" \
    -keyout "$t/signing.key.pem" -out "$t/signing.csr" 2>/dev/null
  printf 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nsubjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n' >"$t/ext.cnf"
  openssl x509 -req -in "$t/signing.csr" -CA "$t/keyring.pem" -CAkey "$t/ca.key.pem" -CAcreateserial \
    -days 36500 -extfile "$t/ext.cnf" -out "$t/signing.cert.pem" 2>/dev/null
  chmod 0600 "$t"/*.key.pem
  mv "$t/ca.key.pem" "$t/signing.key.pem" "$t/signing.cert.pem" "$KEY_DIR/"
  mv "$t/keyring.pem" "$KEY_DIR/keyring.pem"
  echo "signing-key.sh: made a DEVELOPMENT signing key in $KEY_DIR" >&2
fi
case "$what" in
  keyring) echo "$KEY_DIR/keyring.pem" ;;
  cert) echo "$KEY_DIR/signing.cert.pem" ;;
  key) echo "${RAUC_KEY:-$KEY_DIR/signing.key.pem}" ;;
  *) echo "usage: signing-key.sh keyring|cert|key" >&2; exit 2 ;;
esac
