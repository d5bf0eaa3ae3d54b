// Command testsummary reads `go test -json` on its input and prints what
// plain `go test` would (each package's ok or FAIL line and a failing
// test's output; with -v every line, as `go test -v`), then which tests
// were skipped and why: make test without SVC_TEST_POSTGRES_URL and
// SVC_TEST_MQTT_URL skips about 190 PostgreSQL and Mosquitto tests, and a
// green run should say so (issue 19). When a skip names one of those two
// variables it also prints the line that runs them against the local
// services.
//
// It exits 1 when a test, a package or a build failed.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
)

// Module is trimmed from package paths in the summary.
const Module = "github.com/svc-vms/svc/"

// RunLine runs the PostgreSQL and Mosquitto suites on a machine with
// both services on their usual ports (the ones .ci/run starts).
const RunLine = "SVC_TEST_POSTGRES_URL='postgres://postgres@127.0.0.1:5432/test?sslmode=disable' SVC_TEST_MQTT_URL=tcp://127.0.0.1:1883 make test"

// serviceVars are the variables whose absence RunLine fixes.
var serviceVars = []string{"SVC_TEST_POSTGRES_URL", "SVC_TEST_MQTT_URL"}

func main() {
	verbose := flag.Bool("v", false, "print every line of the tests' output, as go test -v")
	out := flag.String("o", "", "also write the skip summary to this file (empty when nothing was skipped)")
	flag.Parse()
	s := New(os.Stdout, *verbose)
	err := s.Read(os.Stdin)
	summary := s.Summary()
	fmt.Print(summary)
	if *out != "" {
		if werr := os.WriteFile(*out, []byte(summary), 0o644); werr != nil && err == nil {
			err = werr
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(2)
	}
	if s.Failed() {
		os.Exit(1)
	}
}

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action     string
	Package    string
	Test       string
	Output     string
	ImportPath string // build-output, build-fail
}

// Summariser turns a `go test -json` stream back into go test's own
// output while it counts the skipped tests by reason.
type Summariser struct {
	w       *bufio.Writer
	verbose bool
	failed  bool
	// pending is each running test's output (non-verbose), printed if
	// the test fails, keyed by package and test name.
	pending map[[2]string][]string
	// skips counts skipped tests by reason, then by package.
	skips map[string]map[string]int
}

// New returns a Summariser writing to w.
func New(w io.Writer, verbose bool) *Summariser {
	return &Summariser{
		w:       bufio.NewWriter(w),
		verbose: verbose,
		pending: map[[2]string][]string{},
		skips:   map[string]map[string]int{},
	}
}

// Read reads events from r until it ends. A line that is not JSON (the
// go command's own messages, should any reach it) is printed as it is.
func (s *Summariser) Read(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			s.w.Write(line)
			s.w.WriteByte('\n')
		} else {
			s.handle(e)
		}
		if err := s.w.Flush(); err != nil {
			return err
		}
	}
	return sc.Err()
}

// Failed reports whether a test, a package or a build failed.
func (s *Summariser) Failed() bool { return s.failed }

// framing lines are test2json's view of -test.v, which plain go test
// does not show.
var framing = []string{"=== RUN", "=== PAUSE", "=== CONT", "=== NAME"}

func (s *Summariser) handle(e event) {
	key := [2]string{e.Package, e.Test}
	switch e.Action {
	case "build-output":
		s.w.WriteString(e.Output)
	case "build-fail":
		s.failed = true
	case "output":
		if e.Test != "" { // kept for the reason of a skip, the output of a failure
			s.pending[key] = append(s.pending[key], e.Output)
		}
		if s.verbose || e.Test == "" && e.Output != "PASS\n" {
			s.w.WriteString(e.Output)
		}
	case "skip":
		if e.Test != "" {
			s.skip(e.Package, reason(s.pending[key]))
		}
		delete(s.pending, key)
	case "pass":
		delete(s.pending, key)
	case "fail":
		s.failed = true
		if e.Test != "" {
			s.flush(key)
			return
		}
		// The package failed: what its unfinished tests printed (a
		// panic, a timeout) explains it.
		var left [][2]string
		for k := range s.pending {
			if k[0] == e.Package {
				left = append(left, k)
			}
		}
		slices.SortFunc(left, func(a, b [2]string) int { return strings.Compare(a[1], b[1]) })
		for _, k := range left {
			s.flush(k)
		}
	}
}

// flush prints a failed test's output (non-verbose: the verbose has
// printed it already) without test2json's framing, its
// "--- FAIL" line first as plain go test has it (under -json, go test -v
// underneath, the test's messages come before it).
func (s *Summariser) flush(key [2]string) {
	var head, body []string
	for _, l := range s.pending[key] {
		if s.verbose {
			break
		}
		switch {
		case slices.ContainsFunc(framing, func(f string) bool { return strings.HasPrefix(l, f) }):
		case strings.HasPrefix(l, "--- "):
			head = append(head, l)
		default:
			body = append(body, l)
		}
	}
	for _, l := range append(head, body...) {
		s.w.WriteString(l)
	}
	delete(s.pending, key)
}

func (s *Summariser) skip(pkg, why string) {
	if s.skips[why] == nil {
		s.skips[why] = map[string]int{}
	}
	s.skips[why][strings.TrimPrefix(pkg, Module)]++
}

// logLine is a t.Log line: "    file_test.go:38: message".
var logLine = regexp.MustCompile(`^\s*[\w.\-]+\.go:\d+: (.*)$`)

// reason is the last message a skipped test logged: t.Skip's. In -json
// (go test -v underneath) it comes before or after the --- SKIP line.
func reason(output []string) string {
	for i := len(output) - 1; i >= 0; i-- {
		if m := logLine.FindStringSubmatch(strings.TrimRight(output[i], "\n")); m != nil {
			return m[1]
		}
	}
	return "(no reason given)"
}

// Summary lists the skipped tests by reason, most first, each with its
// packages, and RunLine when a reason names SVC_TEST_POSTGRES_URL or
// SVC_TEST_MQTT_URL. It is empty when nothing was skipped.
func (s *Summariser) Summary() string {
	if len(s.skips) == 0 {
		return ""
	}
	type group struct {
		why   string
		n     int
		pkgs  []string
		count map[string]int
	}
	var groups []group
	total, services := 0, false
	for why, byPkg := range s.skips {
		g := group{why: why, count: byPkg}
		for p, n := range byPkg {
			g.n += n
			g.pkgs = append(g.pkgs, p)
		}
		slices.Sort(g.pkgs)
		groups = append(groups, g)
		total += g.n
		services = services || slices.ContainsFunc(serviceVars, func(v string) bool { return strings.Contains(why, v) })
	}
	slices.SortFunc(groups, func(a, b group) int {
		if a.n != b.n {
			return b.n - a.n
		}
		return strings.Compare(a.why, b.why)
	})
	var b strings.Builder
	fmt.Fprintf(&b, "\nSKIPPED: %d %s, by reason:\n", total, plural(total, "test", "tests"))
	for _, g := range groups {
		fmt.Fprintf(&b, "  %d: %s\n     in", g.n, g.why)
		for i, p := range g.pkgs {
			sep := ","
			if i == 0 {
				sep = ""
			}
			fmt.Fprintf(&b, "%s %s (%d)", sep, p, g.count[p])
		}
		b.WriteString("\n")
	}
	if services {
		b.WriteString("The PostgreSQL and Mosquitto suites did not run. With both services on this machine, run them with:\n  " + RunLine + "\n")
	}
	return b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
