# Release artefacts. Each target installs the Debian packages it needs
# (as root) and works from a clean checkout; see docs/packaging.md.
#   make binaries   dist/masterorder-linux-{arm64,armv7,amd64} (./build.sh)
#   make deb        dist/masterorder_<v>-1_{arm64,armhf,amd64}.deb, lintian-checked
#   make deb-test   install/upgrade/remove/purge in amd64 bookworm and trixie chroots (root)
#   make image      dist/masterorder-<v>-rpi-arm64.img.xz and its system image .rootfs.ext4 (root, ~25 min), checked by image-check
#   make bundle     dist/masterorder-<v>-rpi-arm64.raucb, the signed update of that build, and dist/release-index.json (root)
#   make image-check  per Pi model: device tree, config.txt section, SD and Ethernet drivers, read from the image (root)
#   make boot-test  boot that image under qemu -M virt, power-cut it, boot again, hang test (root)
#   make update-test  A/B updates of that image under qemu -M virt with U-Boot: install, commit, refusals, fallback, power cut (root, ~1 h)
#   make pi-boot-test  boot it on QEMU's raspi3b and raspi4b with its own kernel and device tree (root, ~1 h)
# VERSION=1.2.0 names the release (default: git describe).

.PHONY: binaries deb deb-test deb-test-arm64 image bundle image-check boot-test update-test pi-boot-test
binaries:
	./build.sh
deb:
	LINTIAN=1 build/deb.sh
deb-test:
	build/deb-test.sh
	SUITE=trixie build/deb-test.sh
deb-test-arm64:
	ARCH=arm64 build/deb-test.sh
image:
	build/image.sh
bundle:
	build/bundle.sh
image-check:
	build/image-check.sh
boot-test:
	build/boot-test.sh
update-test:
	build/update-test.sh
pi-boot-test:
	build/pi-boot-test.sh
