#!/bin/sh
# Debian packages of masterorder, one per box architecture, built with nfpm
# (pinned in build/go.mod) from the release binaries ./build.sh makes.
#
#   build/deb.sh                          # dist/masterorder_<v>-1_{arm64,armhf,amd64}.deb
#   VERSION=1.2.0 build/deb.sh            # name the release
#   DEB_ARCHS=amd64 OUT=/tmp/d build/deb.sh
#   LINTIAN=1 build/deb.sh                # and run lintian on each (fails on an error)
#
# Reproducible: every timestamp is the last commit's (SOURCE_DATE_EPOCH).
set -eu
cd "$(dirname "$0")/.."
root=$(pwd)
export PATH="/usr/local/go/bin:$PATH"

if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
  SOURCE_DATE_EPOCH=$(git log -1 --format=%ct 2>/dev/null || date +%s)
fi
export SOURCE_DATE_EPOCH
VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
export VERSION
OUT=${OUT:-dist}
case "$OUT" in /*) ;; *) OUT="$root/$OUT" ;; esac
DEB_ARCHS=${DEB_ARCHS:-"arm64 armhf amd64"}

# A Debian version must start with a digit and may not contain "-" in the
# upstream part once we add the "-1" revision: v1.2.0-3-gabc -> 1.2.0+3+gabc;
# a bare commit hash -> 0.0~git<commit date>.<hash>.
v=${VERSION#v}
case "$v" in
  [0-9]*.[0-9]*) DEB_VERSION=$(printf '%s' "$v" | tr -- '-_' '++') ;;
  *) DEB_VERSION="0.0~git$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y%m%d).$(printf '%s' "$v" | tr -c 'A-Za-z0-9.+~\n' '+')" ;;
esac
export DEB_VERSION

for tool in dpkg-deb gzip; do
  command -v "$tool" >/dev/null || { echo "deb.sh: needs $tool (apt-get install dpkg gzip)" >&2; exit 1; }
done
if [ "${LINTIAN:-0}" = 1 ] && ! command -v lintian >/dev/null; then
  [ "$(id -u)" = 0 ] || { echo "deb.sh: LINTIAN=1 needs lintian (apt-get install lintian)" >&2; exit 1; }
  echo "== apt-get install lintian"
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends lintian >/dev/null
fi

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
export STAGE="$stage"
date_rfc=$(date -u -R -d "@$SOURCE_DATE_EPOCH")
cat >"$stage/changelog.Debian" <<CHANGELOG
masterorder ($DEB_VERSION-1) stable; urgency=medium

  * Release $VERSION (commit $(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)).

 -- MasterOrder project <masterorder@example.com>  $date_rfc
CHANGELOG
gzip -9n <"$stage/changelog.Debian" >"$stage/changelog.Debian.gz"
gzip -9n <build/deb/masterorder.1 >"$stage/masterorder.1.gz"
gzip -9n <docs/packaging.md >"$stage/packaging.md.gz"

# The same release binaries as ./build.sh (same flags, same version).
targets=""
for a in $DEB_ARCHS; do
  case "$a" in
    arm64) targets="$targets linux/arm64" ;;
    armhf) targets="$targets linux/arm/7" ;;
    amd64) targets="$targets linux/amd64" ;;
    *) echo "deb.sh: unknown architecture $a (arm64, armhf, amd64)" >&2; exit 2 ;;
  esac
done
mkdir -p "$OUT"
TARGETS="$targets" OUT="$OUT" ./build.sh

status=0
for a in $DEB_ARCHS; do
  case "$a" in
    arm64) bin=masterorder-linux-arm64 ;;
    armhf) bin=masterorder-linux-armv7 ;;
    amd64) bin=masterorder-linux-amd64 ;;
  esac
  deb="$OUT/masterorder_${DEB_VERSION}-1_${a}.deb"
  rm -f "$deb"
  (cd build/deb && DEB_ARCH=$a BINARY="$OUT/$bin" \
    go tool -modfile=../go.mod nfpm package --config nfpm.yaml --packager deb --target "$deb" >/dev/null)
  echo "$deb  $(wc -c <"$deb") bytes"
  if [ "${LINTIAN:-0}" = 1 ]; then
    # --fail-on error: warnings are reported (and explained in
    # docs/packaging.md), errors fail the build.
    lintian --fail-on error --display-info "$deb" || status=1
  fi
done
exit $status
