#!/bin/bash
# abtest.sh: boots out/ab.img under qemu+U-Boot, updates to 2.0.0 (commits), then to 3.0.0-bad (rolls back).
set -u
cd "$(dirname "$0")"
cp out/ab-qemu.img out/abrun.img; LOG=abtest.log; : > $LOG
T0=$(date +%s.%N)
./abqemu.sh out/abrun.img $LOG & QPID=$!
trap 'kill $QPID 2>/dev/null' EXIT
el() { echo "$(date +%s.%N) - $T0" | bc; }
waitfor() { # pattern timeout [count]
  local end=$(( $(date +%s) + $2 ))
  while [ $(date +%s) -lt $end ]; do [ $(grep -ac -- "$1" $LOG) -ge ${3:-1} ] && { echo "[$(el)s] seen: $1"; return 0; }; sleep 0.5; done
  echo "TIMEOUT waiting for: $1"; exit 1; }
waitfor "ENROLMENT CODE: K7Q-4XZ version=1.0.0 slot=a" 300
until curl -sf -m 300 -T out/root-2.0.0.sqfs http://127.0.0.1:${PORT:-18082}/update; do sleep 1; done
waitfor "COMMITTED slot b version 2.0.0" 300
waitfor "ENROLMENT CODE: K7Q-4XZ version=2.0.0 slot=b" 60
until curl -sf -m 300 -T out/root-3.0.0-bad.sqfs http://127.0.0.1:${PORT:-18082}/update; do sleep 1; done
waitfor "HEALTH CHECK FAILED on trial of 3.0.0-bad" 300
waitfor "A/B: committed b, trial \[a\], booting b (trial 0)" 300
waitfor "version 2.0.0 running from slot b (committed b, trial false)" 300
until curl -sf -m 300 -T out/root-4.0.0-panic.sqfs http://127.0.0.1:${PORT:-18082}/update; do sleep 1; done
waitfor "Kernel panic" 60
waitfor "version 2.0.0 running from slot b (committed b, trial false)" 300 2
echo "PASS in $(el)s"
