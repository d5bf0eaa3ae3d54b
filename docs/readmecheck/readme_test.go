// Package readmecheck guards the README's walk-throughs against the
// mistakes a newcomer met in them (issue 19): commands that stop other
// people's processes, fixed sleeps that are too short after a real outage,
// a host picked among people who may have been deactivated, and a periods
// query that shows other weeks than the text promises. It reads the shell
// blocks only; it does not run them.
package readmecheck

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// block is one fenced shell block of the README: its first line's number
// and its lines.
type block struct {
	line  int
	lines []string
}

func shellBlocks(t *testing.T) []block {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []block
	var cur *block
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		switch {
		case cur == nil && (l == "```sh" || l == "```bash" || l == "```shell"):
			cur = &block{line: n + 1}
		case cur != nil && l == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.lines = append(cur.lines, l)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) < 10 {
		t.Fatalf("found %d shell blocks in README.md; the walk-throughs have more", len(out))
	}
	return out
}

var (
	pkill     = regexp.MustCompile(`\b(pkill|killall)\b`)
	sleep     = regexp.MustCompile(`\bsleep\s+[0-9]`)
	waitFor   = regexp.MustCompile(`^\s*wait_for\(\)\s*\{`)
	hostPick  = regexp.MustCompile(`^\s*HOST=.*\$API/people\?`)
	periodsQ  = regexp.MustCompile(`timesheet-periods\?`)
	usesWaitF = regexp.MustCompile(`(^|[;&|(]\s*|\s)wait_for\s+[0-9]`)
)

// TestReadme_WalkThroughsWaitAndStopAsPromised: no block stops processes
// by name (on a shared machine, everyone's), and none waits with a fixed
// sleep, except the one second between the checks of wait_for, which is
// defined before its first use.
func TestReadme_WalkThroughsWaitAndStopAsPromised(t *testing.T) {
	defined := false
	for _, b := range shellBlocks(t) {
		inWaitFor := false
		for i, l := range b.lines {
			n := b.line + i
			if strings.HasPrefix(strings.TrimSpace(l), "#") {
				continue
			}
			if pkill.MatchString(l) {
				t.Errorf("README.md:%d stops processes by name (%q): use the PID", n, l)
			}
			if waitFor.MatchString(l) {
				inWaitFor, defined = true, true
			}
			if sleep.MatchString(l) && !(inWaitFor && strings.Contains(l, "sleep 1")) {
				t.Errorf("README.md:%d waits with a fixed sleep (%q): use wait_for with a deadline", n, l)
			}
			if inWaitFor && strings.TrimSpace(l) == "}" {
				inWaitFor = false
			}
			if usesWaitF.MatchString(l) && !defined {
				t.Errorf("README.md:%d uses wait_for before the README defines it", n)
			}
		}
	}
	if !defined {
		t.Error("README.md does not define wait_for")
	}
}

// TestReadme_QueriesAskForWhatTheTextPromises: the host a walk-through
// uses is an active person (the curl walk-through deactivates one), and
// the periods shown are the ones containing today, not the next few.
func TestReadme_QueriesAskForWhatTheTextPromises(t *testing.T) {
	hosts, periods := 0, 0
	for _, b := range shellBlocks(t) {
		for i, l := range b.lines {
			n := b.line + i
			if hostPick.MatchString(l) {
				hosts++
				if !strings.Contains(l, "active=true") {
					t.Errorf("README.md:%d picks a host without active=true: it may be the person deactivated above", n)
				}
			}
			if periodsQ.MatchString(l) {
				periods++
				if !strings.Contains(l, "from=") || !strings.Contains(l, "to=") {
					t.Errorf("README.md:%d lists timesheet periods without from and to: it shows other weeks than this one", n)
				}
			}
		}
	}
	if hosts == 0 || periods == 0 {
		t.Errorf("found %d host picks and %d period queries; the walk-throughs have both", hosts, periods)
	}
}
