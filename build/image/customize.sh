#!/bin/sh
# Runs inside the image's root filesystem (mmdebstrap --customize-hook),
# after the packages, masterorder.deb and build/image/rootfs are in place.
set -eu
systemctl enable systemd-networkd.service masterorder-hostname.service \
  masterorder-growdata.service masterorder-factory-reset.service masterorder-machine-id.service \
  masterorder-commit.service masterorder-reboot.path
# The clock: NTP from the store's network when there is one (its servers
# from DHCP, else Debian's pool), and at every boot at least the time the
# box last knew (timesyncd's clock file, on the data partition).
systemctl enable masterorder.service avahi-daemon.service ssh.service systemd-timesyncd.service
# An appliance: no unattended package runs, no first-boot prompts on a
# console nobody watches.
systemctl mask apt-daily.timer apt-daily-upgrade.timer systemd-firstboot.service
# Every card would share them: made on the box by ssh-prepare.
rm -f /etc/ssh/ssh_host_*
# Root is read-only: systemd makes a machine id per boot (DHCP uses the MAC).
: >/etc/machine-id
rm -f /var/lib/dbus/machine-id
ln -s /etc/machine-id /var/lib/dbus/machine-id
# Set per boot from the board serial (masterorder-hostname.service).
rm -f /etc/hostname
printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' >/etc/hosts
mkdir -p /data /boot/firmware
# cmdline.txt and config.txt again, now that /etc/default/raspi-firmware
# and raspi-extra-cmdline are ours.
DEB_MAINT_PARAMS=configure /etc/kernel/postinst.d/z50-raspi-firmware
# The Pi 5's firmware looks for its D0 stepping's tree under the name
# Raspberry Pi's kernel uses; the upstream kernel calls it bcm2712-d-rpi-5-b.
cp /boot/firmware/bcm2712-d-rpi-5-b.dtb /boot/firmware/bcm2712d0-rpi-5-b.dtb
# A/B system slots: the firmware starts U-Boot (Debian's u-boot-rpi,
# rpi_arm64: one binary for the Pi 3, 4 and 5), whose boot.scr (image.sh)
# picks slot A or B and starts the kernel and initramfs of that slot, so an
# update brings its own kernel. The boot partition keeps only what the
# firmware reads (and the device trees it passes on).
kver=$(ls /usr/lib/modules | sort -V | tail -n1)
ln -f "/boot/vmlinuz-$kver" /boot/vmlinuz
ln -f "/boot/initrd.img-$kver" /boot/initrd.img
cp /usr/lib/u-boot/rpi_arm64/u-boot.bin /boot/firmware/u-boot.bin
rm -f /boot/firmware/vmlinuz-* /boot/firmware/initrd.img-* /boot/firmware/cmdline.txt
sed -i -e 's/^kernel=.*/kernel=u-boot.bin/' -e '/^initramfs /d' /boot/firmware/config.txt
grep -q '^arm_64bit=1' /boot/firmware/config.txt || sed -i '1i arm_64bit=1' /boot/firmware/config.txt
# U-Boot's console on the Pi 3/4's mini UART (ttyS1, as the kernel's) needs
# it set up by the firmware (on a Pi 3 this fixes the core clock at 250 MHz:
# nothing a headless box misses).
grep -q '^enable_uart=1' /boot/firmware/config.txt || printf '[all]\nenable_uart=1\n' >>/boot/firmware/config.txt
# The OS keeps UTC: the store's time zone is MasterOrder's (it is asked in
# the setup wizard and replicated), not the box's.
if [ -e /usr/share/zoneinfo/Etc/UTC ]; then ln -sf /usr/share/zoneinfo/Etc/UTC /etc/localtime; else rm -f /etc/localtime; fi
apt-get clean
rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/cache/debconf/*-old
# (/tmp is left alone: this script runs from there; on the box it is tmpfs.)
find /var/log /var/tmp -mindepth 1 -delete
# /usr is not newer than /etc and /var: no "needs update" service writes at boot.
touch /etc/.updated /var/.updated
