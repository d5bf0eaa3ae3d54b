package update

import (
	"fmt"
	"strconv"
	"strings"
)

// BootState is ab.txt, the A/B state on the boot partition that U-Boot's
// boot script (firmware-images/boot.cmd) reads on every boot:
//
//	slot=a      the committed slot
//	trial=b     a slot to start once on trial; empty: none
//	tries=1     starts left for the trial (1 when requested, 0 once spent)
//
// ParseBootState reads it by the boot script's rules, so what Linux
// believes and what the boot loader boots never differ.
type BootState struct {
	Slot  string
	Trial string
	Tries int
}

// BootFile is ab.txt's name on the boot partition.
const BootFile = "ab.txt"

// ParseBootState reads ab.txt as the boot script does: defaults slot=a,
// trial= and tries=0, then every line name=value (U-Boot's `env import
// -t`; a line without "=" and a name other than these three change
// nothing; NULs and a CR are ignored). A slot other than "b" is slot a
// (the script picks the root partition with `test "${slot}" = "b"`); a
// trial other than a or b, and tries that are not a number, are no trial.
// So a missing or damaged file is slot a with no trial: it never fails.
func ParseBootState(b []byte) BootState {
	vars := map[string]string{"slot": "a", "trial": "", "tries": "0"}
	for _, line := range strings.Split(strings.ReplaceAll(string(b), "\x00", ""), "\n") {
		name, value, ok := strings.Cut(strings.TrimSuffix(line, "\r"), "=")
		if _, known := vars[name]; ok && known {
			vars[name] = value
		}
	}
	s := BootState{Slot: "a"}
	if vars["slot"] == "b" {
		s.Slot = "b"
	}
	if t := vars["trial"]; t == "a" || t == "b" {
		s.Trial = t
		// The script compares with `test ${tries} -gt 0`: not a number is
		// not greater than 0.
		if n, err := strconv.Atoi(vars["tries"]); err == nil && n > 0 {
			s.Tries = n
		}
	}
	return s
}

// Marshal is the file's bytes, in the order and form U-Boot's `env export
// -t` writes them (names sorted).
func (s BootState) Marshal() []byte {
	return fmt.Appendf(nil, "slot=%s\ntrial=%s\ntries=%d\n", s.Slot, s.Trial, s.Tries)
}

// Boot is what the boot script does with s: the slot it boots, whether
// as the trial (svc.trial=1 on the kernel command line), and the state it
// writes back first (the trial's try spent), which is s itself when it
// writes nothing.
func (s BootState) Boot() (slot string, trial bool, next BootState) {
	if s.Trial != "" && s.Tries > 0 {
		next = s
		next.Tries--
		return s.Trial, true, next
	}
	return s.Slot, false, s
}

// Cmdline is what the boot script puts on the kernel command line for a
// boot of slot (committed: s.Slot), as Partitions reads it back.
func (s BootState) Cmdline(slot string, trial bool) string {
	t := "0"
	if trial {
		t = "1"
	}
	return fmt.Sprintf("console=ttyAMA0 rootwait panic=10 svc.slot=%s svc.committed=%s svc.trial=%s", slot, s.Slot, t)
}

// cmdlineVar is name's value on a kernel command line; "" when absent.
func cmdlineVar(cmdline, name string) string {
	for _, f := range strings.Fields(cmdline) {
		if v, ok := strings.CutPrefix(f, name+"="); ok {
			return v
		}
	}
	return ""
}
