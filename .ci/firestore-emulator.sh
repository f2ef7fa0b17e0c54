#!/usr/bin/env bash
# Makes sure the Cloud Firestore emulator is installed, for the tests of
# orders/cloudsync (they fail without it when CI=true). Silent and quick
# when it already is; exits 1 with one clear message when it cannot be had.
#
# The emulator is the Debian package google-cloud-cli-firestore-emulator
# (it depends on google-cloud-cli and an OpenJDK). It is not in Debian's own
# archive: it comes from Google's Cloud SDK apt repository. This project's
# machine image ships it preinstalled, and that repository is not among the
# apt sources reachable here, so nothing outside the configured sources is
# tried. Java comes from Debian if it is missing.
set -euo pipefail

pkg=google-cloud-cli-firestore-emulator
rel=platform/cloud-firestore-emulator/cloud_firestore_emulator

installed() {
	[ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null)" = installed ]
}

launcher() {
	local root=/usr/lib/google-cloud-sdk
	if [ ! -x "$root/$rel" ] && command -v gcloud >/dev/null 2>&1; then
		root=$(gcloud info --format='value(installation.sdk_root)' 2>/dev/null || true)
	fi
	[ -n "$root" ] && [ -x "$root/$rel" ] && echo "$root/$rel"
}

ready() {
	installed "$pkg" && command -v java >/dev/null 2>&1 && launcher >/dev/null
}

ready && exit 0

if [ "$(id -u)" != 0 ]; then
	echo "firestore-emulator: $pkg (with java) is not installed and this is not root; install it with apt-get" >&2
	exit 1
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT
export DEBIAN_FRONTEND=noninteractive
apt_install() {
	apt-get install -y -qq -o DPkg::Lock::Timeout=300 --no-install-recommends "$@" >>"$log" 2>&1
}

if ! installed "$pkg" && ! apt_install "$pkg"; then
	apt-get update -qq -o DPkg::Lock::Timeout=300 >>"$log" 2>&1 || true
	if ! apt_install "$pkg"; then
		echo "firestore-emulator: cannot install $pkg: it is not in the configured apt sources (it comes from Google's Cloud SDK apt repository, which is not configured or reachable on this machine). apt said:" >&2
		grep -E '^(E|W):' "$log" | tail -n 5 >&2 || tail -n 5 "$log" >&2
		exit 1
	fi
fi
if ! command -v java >/dev/null 2>&1 && ! apt_install openjdk-17-jre-headless; then
	apt-get update -qq -o DPkg::Lock::Timeout=300 >>"$log" 2>&1 || true
	apt_install openjdk-17-jre-headless || {
		echo "firestore-emulator: cannot install java (openjdk-17-jre-headless):" >&2
		tail -n 5 "$log" >&2
		exit 1
	}
fi
if ! ready; then
	echo "firestore-emulator: $pkg is installed but its launcher ($rel under the Cloud SDK root) is missing" >&2
	exit 1
fi
