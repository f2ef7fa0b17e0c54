# MasterOrder A/B boot: which system slot to start (U-Boot script).
# build/image.sh compiles it to boot.scr on the boot partition (mkimage);
# the same script runs on every Raspberry Pi (Debian's u-boot-rpi,
# rpi_arm64, started by the Pi firmware as kernel=u-boot.bin) and under
# qemu -M virt (Debian's u-boot-qemu, build/boot-test.sh and
# build/update-test.sh). See docs/packaging.md, "System slots and updates".
#
# The card: 1 boot (FAT, this file), 2 system slot A (rootfs.0), 3 system
# slot B (rootfs.1), 4 data. Each slot holds its own kernel and initramfs
# (/boot/vmlinuz, /boot/initrd.img); the device tree is the one the board's
# firmware passed (on a Pi: with its serial number and memory), or QEMU's.
#
# The boot state is a small text file on the boot partition,
# mo-bootstate.env, written here and by RAUC's custom backend
# (/usr/lib/masterorder-image/bootstate) on the box:
#   BOOT_ORDER   slots in the order to try ("A B": A first)
#   BOOT_x_LEFT  boot attempts left for slot x; every start of a slot takes
#                one; the box gives it back (3) once MasterOrder is healthy
#                (rauc status mark-good). A slot with 0 left is skipped.
#                A newly installed slot gets 1: it boots once, and if it
#                never becomes healthy the next start is the old slot.
#   BOOT_TRIAL   the slot on trial (installed, not yet healthy), or none
# A slot whose kernel cannot be loaded (an empty or half-written slot) is
# given 0 attempts and the board restarts into the other.

test -n "${devtype}" || setenv devtype mmc
test -n "${devnum}" || setenv devnum 0
setenv mo_state mo-bootstate.env
setenv mo_scratch ${kernel_addr_r}

setenv BOOT_ORDER
setenv BOOT_A_LEFT
setenv BOOT_B_LEFT
setenv BOOT_TRIAL
if load ${devtype} ${devnum}:1 ${mo_scratch} ${mo_state}; then
  env import -t ${mo_scratch} ${filesize} BOOT_ORDER BOOT_A_LEFT BOOT_B_LEFT BOOT_TRIAL
fi
test -n "${BOOT_ORDER}" || setenv BOOT_ORDER "A B"
test -n "${BOOT_A_LEFT}" || setenv BOOT_A_LEFT 3
test -n "${BOOT_B_LEFT}" || setenv BOOT_B_LEFT 3
test -n "${BOOT_TRIAL}" || setenv BOOT_TRIAL none

# Optional, for tests and integrators: extra kernel arguments
# (mo-bootargs.env on the boot partition: mo_extra_bootargs=...).
setenv mo_extra_bootargs
if test -e ${devtype} ${devnum}:1 mo-bootargs.env && load ${devtype} ${devnum}:1 ${mo_scratch} mo-bootargs.env; then
  env import -t ${mo_scratch} ${filesize} mo_extra_bootargs
fi

setenv mo_slot
for BOOT_SLOT in "${BOOT_ORDER}"; do
  if test -z "${mo_slot}"; then
    if test "${BOOT_SLOT}" = "A"; then
      if test ${BOOT_A_LEFT} -gt 0; then
        setexpr BOOT_A_LEFT ${BOOT_A_LEFT} - 1
        setenv mo_slot A
        setenv mo_rootpart 2
      fi
    elif test "${BOOT_SLOT}" = "B"; then
      if test ${BOOT_B_LEFT} -gt 0; then
        setexpr BOOT_B_LEFT ${BOOT_B_LEFT} - 1
        setenv mo_slot B
        setenv mo_rootpart 3
      fi
    fi
  fi
done

if test -z "${mo_slot}"; then
  echo "masterorder: no slot has attempts left: 3 attempts each again"
  setenv BOOT_A_LEFT 3
  setenv BOOT_B_LEFT 3
  env export -t ${mo_scratch} BOOT_ORDER BOOT_A_LEFT BOOT_B_LEFT BOOT_TRIAL
  fatwrite ${devtype} ${devnum}:1 ${mo_scratch} ${mo_state} ${filesize}
  reset
fi
echo "masterorder: booting slot ${mo_slot} (order ${BOOT_ORDER}; attempts left A ${BOOT_A_LEFT}, B ${BOOT_B_LEFT}; on trial ${BOOT_TRIAL})"
env export -t ${mo_scratch} BOOT_ORDER BOOT_A_LEFT BOOT_B_LEFT BOOT_TRIAL
fatwrite ${devtype} ${devnum}:1 ${mo_scratch} ${mo_state} ${filesize}

if test "${board}" = "rpi"; then
  setenv mo_consoles "console=tty0 console=ttyAMA10,115200 console=ttyS1,115200"
else
  setenv mo_consoles "console=ttyAMA0,115200"
fi
setenv bootargs "${mo_consoles} root=PARTUUID=4d4f5244-0${mo_rootpart} rootfstype=ext4 ro rootwait fsck.repair=yes net.ifnames=0 systemd.show_status=auto rauc.slot=${mo_slot} ${mo_extra_bootargs}"

# The slot's kernel (Debian's arm64 vmlinuz is an uncompressed Image of
# about 50 MiB; were it gzip, booti unpacks it to kernel_comp_addr_r) and
# its initramfs 128 MiB above the kernel, clear of the kernel's own memory.
setexpr mo_initrd_addr ${kernel_addr_r} + 0x8000000
test -n "${kernel_comp_addr_r}" || setexpr kernel_comp_addr_r ${kernel_addr_r} + 0xc000000
if load ${devtype} ${devnum}:${mo_rootpart} ${kernel_addr_r} /boot/vmlinuz; then
  setenv kernel_comp_size ${filesize}
  if load ${devtype} ${devnum}:${mo_rootpart} ${mo_initrd_addr} /boot/initrd.img; then
    setenv mo_initrd_size ${filesize}
    test -n "${fdt_addr}" || setenv fdt_addr ${fdtcontroladdr}
    booti ${kernel_addr_r} ${mo_initrd_addr}:${mo_initrd_size} ${fdt_addr}
  fi
fi
echo "masterorder: slot ${mo_slot} cannot be started: 0 attempts left for it"
setenv BOOT_${mo_slot}_LEFT 0
env export -t ${mo_scratch} BOOT_ORDER BOOT_A_LEFT BOOT_B_LEFT BOOT_TRIAL
fatwrite ${devtype} ${devnum}:1 ${mo_scratch} ${mo_state} ${filesize}
reset
