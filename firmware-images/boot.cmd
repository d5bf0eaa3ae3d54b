# The appliance's U-Boot script (mkimage makes boot.scr of it).
# A/B trial boot: ab.txt on the boot partition names the committed slot and,
# for one boot, a trial slot. U-Boot spends the trial's try before booting it,
# so a trial that hangs, panics or reboots without committing falls back.
# svc.txt (cloud=URL, simulate=1 on a board without GPIO, ntp=host,host for
# a site's own time servers, update_every=10m to ask for releases more often
# than every 5 minutes), which the installer may edit, gives svc-edge its
# cloud.
# The kernels are gzip'd: booti inflates them 64 MiB above kernel_addr_r.
setenv slot a
setenv trial
setenv tries 0
setenv cloud
setenv simulate 0
setenv update_every
setenv ntp
if load ${devtype} ${devnum}:1 ${scriptaddr} svc.txt; then env import -t ${scriptaddr} ${filesize}; fi
if load ${devtype} ${devnum}:1 ${scriptaddr} ab.txt; then env import -t ${scriptaddr} ${filesize}; fi
setenv bootslot ${slot}
setenv istrial 0
if test -n "${trial}"; then
  if test ${tries} -gt 0; then
    setexpr tries ${tries} - 1
    env export -t ${scriptaddr} slot trial tries
    fatwrite ${devtype} ${devnum}:1 ${scriptaddr} ab.txt ${filesize}
    setenv bootslot ${trial}
    setenv istrial 1
  fi
fi
if test "${bootslot}" = "b"; then setenv rootpart 03; else setenv rootpart 02; fi
echo "A/B: committed ${slot}, trial [${trial}], booting ${bootslot} (trial ${istrial})"
setenv bootargs "console=tty1 console=ttyAMA0 root=PARTUUID=2e9a5c10-${rootpart} init=/gokrazy/init rootwait panic=10 oops=panic svc.slot=${bootslot} svc.committed=${slot} svc.trial=${istrial} svc.cloud=${cloud} svc.simulate=${simulate} svc.update_every=${update_every} svc.ntp=${ntp}"
load ${devtype} ${devnum}:1 ${kernel_addr_r} vmlinuz-${bootslot}
setenv kernel_comp_size ${filesize}
setexpr kernel_comp_addr_r ${kernel_addr_r} + 0x4000000
booti ${kernel_addr_r} - ${fdtcontroladdr}
