#!/bin/sh
# Release builds: one static binary per box architecture (CGO_ENABLED=0,
# the web apps embedded), with version, commit and build date set through
# -ldflags on main.version, main.commit and main.buildDate.
#
#   ./build.sh                         # dist/masterorder-linux-{arm64,armv7,amd64} + SHA256SUMS
#   VERSION=1.2.0 ./build.sh           # name the release
#   TARGETS=linux/arm64 OUT=/tmp/b ./build.sh
set -eu
cd "$(dirname "$0")"
VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
COMMIT=${COMMIT:-$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)}
if [ -n "${SOURCE_DATE_EPOCH:-}" ]; then
  BUILD_DATE=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)
else
  BUILD_DATE=${BUILD_DATE:-$(date -u +%Y-%m-%dT%H:%M:%SZ)}
fi
OUT=${OUT:-dist}
TARGETS=${TARGETS:-"linux/arm64 linux/arm/7 linux/amd64"}
LDFLAGS="-s -w -X main.version=$VERSION -X main.commit=$COMMIT -X main.buildDate=$BUILD_DATE"

mkdir -p "$OUT"
for target in $TARGETS; do
  goos=${target%%/*}
  rest=${target#*/}
  goarch=${rest%%/*}
  goarm=""
  suffix=$goarch
  if [ "$goarch" = arm ]; then
    goarm=${rest#arm}
    goarm=${goarm#/}
    goarm=${goarm:-7}
    suffix=armv$goarm
  fi
  name=masterorder-$goos-$suffix
  env CGO_ENABLED=0 GOOS="$goos" GOARCH="$goarch" ${goarm:+GOARM=$goarm} \
    go build -trimpath -ldflags "$LDFLAGS" -o "$OUT/$name" .
  echo "$OUT/$name  $(wc -c <"$OUT/$name") bytes"
done
(cd "$OUT" && sha256sum masterorder-* >SHA256SUMS)
echo "masterorder $VERSION (commit $COMMIT, built $BUILD_DATE)"
