// Package promtest checks a Prometheus exposition the way an
// operator's tools read it: with promtool, Prometheus's own linter.
//
// It may import the standard library and testing only.
package promtest

import (
	"bytes"
	"os"
	"os/exec"
	"testing"
)

// Environment variables: EnvPromtool names the promtool binary (else it
// is looked up on PATH); EnvRequire, set to 1 (as .ci/run does), turns a
// missing promtool from a skip into a failure.
const (
	EnvPromtool = "SVC_TEST_PROMTOOL"
	EnvRequire  = "SVC_TEST_REQUIRE_SERVICES"
)

// Promtool returns the path of promtool, or skips t without it (fails t
// under EnvRequire).
func Promtool(t testing.TB) string {
	t.Helper()
	if p := os.Getenv(EnvPromtool); p != "" {
		return p
	}
	p, err := exec.LookPath("promtool")
	if err == nil {
		return p
	}
	const how = "promtool is not installed (Debian: apt-get download prometheus && dpkg-deb -x prometheus_*.deb DIR; " +
		"then set " + EnvPromtool + "=DIR/usr/bin/promtool, as .ci/run does)"
	if os.Getenv(EnvRequire) == "1" {
		t.Fatal(how + " but " + EnvRequire + "=1")
	}
	t.Skip(how)
	return ""
}

// CheckMetrics runs `promtool check metrics` on a scrape of /metrics (the
// text format) and fails t with promtool's complaints: names without
// their unit or _total, counters that are not, missing help.
func CheckMetrics(t testing.TB, exposition []byte) {
	t.Helper()
	cmd := exec.Command(Promtool(t), "check", "metrics")
	cmd.Stdin = bytes.NewReader(exposition)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
}
