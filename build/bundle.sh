#!/bin/bash
# The signed RAUC update bundle, from the same build as the image: the
# system image build/image.sh wrote next to it (the same bytes as the
# image's slot A), signed with the release key, which is never on a box
# (the image carries only its CA certificate, /etc/rauc/keyring.pem).
#
#   build/bundle.sh                          # the newest dist/masterorder-*-rpi-arm64.rootfs.ext4
#   build/bundle.sh dist/masterorder-1.2.0-rpi-arm64.rootfs.ext4
#   KEY_DIR=/media/release-key build/bundle.sh ...   # the release key (docs/packaging.md)
#   BUNDLE_VERSION=1.2.1 build/bundle.sh ...  # tests only: another version from the same system
#   RELEASE_URL=https://example.com/masterorder/ build/bundle.sh   # the index's url (default: the file name)
#
# Writes dist/masterorder-<version>-rpi-arm64.raucb and the release index
# entry dist/release-index.json (version, compatible, board, url, sha256,
# size) the console reads. Without KEY_DIR a development key is made or
# reused in /var/lib/masterorder-build/dev-key (build/signing-key.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
COMPATIBLE=masterorder-rpi-arm64
BOARD=rpi-arm64
OUT=${OUT:-dist}
case "$OUT" in /*) ;; *) OUT="$root/$OUT" ;; esac

[ "$(id -u)" = 0 ] || { echo "bundle.sh: run as root (apt-get)" >&2; exit 1; }
need=()
for t in rauc:rauc mksquashfs:squashfs-tools openssl:openssl jq:jq e2fsck:e2fsprogs; do
  command -v "${t%%:*}" >/dev/null || need+=("${t#*:}")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "== apt-get install ${need[*]}"
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

rootfs=${1:-$(ls -t "$OUT"/masterorder-*-rpi-arm64.rootfs.ext4 2>/dev/null | head -n1)}
[ -n "$rootfs" ] && [ -f "$rootfs" ] || { echo "bundle.sh: no system image (build/image.sh writes dist/masterorder-<v>-rpi-arm64.rootfs.ext4)" >&2; exit 1; }
base=$(basename "$rootfs")
version=${base#masterorder-}
version=${version%-rpi-arm64.rootfs.ext4}
VERSION=${BUNDLE_VERSION:-$version}
e2fsck -fn "$rootfs" >/dev/null 2>&1 || { echo "bundle.sh: $rootfs is not a clean ext4 file system" >&2; exit 1; }

cert=$(build/signing-key.sh cert)
key=$(build/signing-key.sh key)
keyring=$(build/signing-key.sh keyring)

work=$(mktemp -d /tmp/masterorder-bundle.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir "$work/in"
cp --sparse=always "$rootfs" "$work/in/rootfs.ext4"
cat >"$work/in/manifest.raucm" <<MANIFEST
[update]
compatible=$COMPATIBLE
version=$VERSION
description=MasterOrder $VERSION: Debian and MasterOrder, the whole system of a box
build=$(date -u -d "@${SOURCE_DATE_EPOCH:-$(stat -c %Y "$rootfs")}" +%Y%m%d%H%M%S)

[bundle]
format=plain

[image.rootfs]
filename=rootfs.ext4
MANIFEST

name="masterorder-$VERSION-rpi-arm64.raucb"
mkdir -p "$OUT"
rm -f "$OUT/$name.tmp"
echo "== rauc bundle $name (system $(du -h --apparent-size "$rootfs" | cut -f1), signed by $(openssl x509 -in "$cert" -noout -subject | sed 's/^subject=//'))"
rauc bundle --cert="$cert" --key="$key" --keyring="$keyring" "$work/in" "$OUT/$name.tmp" >"$work/bundle.log" 2>&1 ||
  { cat "$work/bundle.log" >&2; exit 1; }
mv "$OUT/$name.tmp" "$OUT/$name"
rauc info --keyring="$keyring" --output-format=json "$OUT/$name" 2>/dev/null >"$work/info.json" ||
  { echo "bundle.sh: rauc info does not accept the bundle just made" >&2; exit 1; }
[ "$(jq -r .compatible "$work/info.json")" = "$COMPATIBLE" ] && [ "$(jq -r .version "$work/info.json")" = "$VERSION" ] ||
  { echo "bundle.sh: the bundle says $(jq -c '{compatible,version}' "$work/info.json")" >&2; exit 1; }

sha=$(sha256sum "$OUT/$name" | cut -d' ' -f1)
size=$(stat -c %s "$OUT/$name")
echo "$sha  $name" >"$OUT/$name.sha256"
jq -n --arg version "$VERSION" --arg compatible "$COMPATIBLE" --arg board "$BOARD" \
  --arg url "${RELEASE_URL:-}$name" --arg sha256 "$sha" --argjson size "$size" \
  '{version: $version, compatible: $compatible, board: $board, url: $url, sha256: $sha256, size: $size}' >"$OUT/release-index.json"
echo "$OUT/$name  $size bytes, sha256 $sha"
echo "$OUT/release-index.json: $(jq -c . "$OUT/release-index.json")"
