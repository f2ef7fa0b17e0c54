# Release artefacts. Each target installs the Debian packages it needs
# (as root) and works from a clean checkout; see docs/packaging.md.
#   make binaries   dist/masterorder-linux-{arm64,armv7,amd64} (./build.sh)
#   make deb        dist/masterorder_<v>-1_{arm64,armhf,amd64}.deb, lintian-checked
#   make deb-test   install/upgrade/remove/purge in an amd64 chroot (root)
#   make image      dist/masterorder-<v>-rpi-arm64.img.xz (root, ~20 min)
#   make boot-test  boot that image under qemu, power-cut it, boot again (root)
# VERSION=1.2.0 names the release (default: git describe).

.PHONY: binaries deb deb-test deb-test-arm64 image boot-test
binaries:
	./build.sh
deb:
	LINTIAN=1 build/deb.sh
deb-test:
	build/deb-test.sh
deb-test-arm64:
	ARCH=arm64 build/deb-test.sh
image:
	build/image.sh
boot-test:
	build/boot-test.sh
