package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// testdata/mixed.json is go test -json of a package with a passing test
// that logs, a test skipped through a helper, a subtest skipped and one
// failed, and a test printing to stdout; then a package whose one test is
// skipped, and one without tests.
func TestSummariser_PlainOutputAndSkips(t *testing.T) {
	in, err := os.ReadFile("testdata/mixed.json")
	require.NoError(t, err)
	var out bytes.Buffer
	s := New(&out, false)
	require.NoError(t, s.Read(bytes.NewReader(in)))
	require.True(t, s.Failed())

	// What plain go test prints: the failures' output and each package's
	// last line; no framing, no passing or skipped test's logs.
	require.Equal(t, ""+
		"--- FAIL: TestSub/y (0.00s)\n"+
		"    a_test.go:8: boom\n"+
		"--- FAIL: TestSub (0.00s)\n"+
		"FAIL\n"+
		"FAIL\tgithub.com/svc-vms/svc/cloud/postgres\t0.005s\n"+
		"ok  \tgithub.com/svc-vms/svc/edge/sitetest\t0.012s\n"+
		"?   \tgithub.com/svc-vms/svc/gate\t[no test files]\n", out.String())

	require.Equal(t, "\n"+
		"SKIPPED: 3 tests, by reason:\n"+
		"  2: SVC_TEST_MQTT_URL is not set\n"+
		"     in cloud/postgres (1), edge/sitetest (1)\n"+
		"  1: SVC_TEST_POSTGRES_URL is not set\n"+
		"     in cloud/postgres (1)\n"+
		"The PostgreSQL and Mosquitto suites did not run. With both services on this machine, run them with:\n"+
		"  "+RunLine+"\n", s.Summary())
}

func TestSummariser_Verbose(t *testing.T) {
	in, err := os.ReadFile("testdata/mixed.json")
	require.NoError(t, err)
	var out bytes.Buffer
	s := New(&out, true)
	require.NoError(t, s.Read(bytes.NewReader(in)))
	require.Contains(t, out.String(), "=== RUN   TestPass\n    a_test.go:6: quiet\n--- PASS: TestPass (0.00s)\n")
	require.Contains(t, out.String(), "--- SKIP: TestSite (0.00s)\n")
	require.Contains(t, s.Summary(), "SKIPPED: 3 tests")
	require.Contains(t, s.Summary(), "  1: SVC_TEST_POSTGRES_URL is not set\n")
	require.Equal(t, 1, strings.Count(out.String(), "boom"), "a failure's output printed once")
}

// Nothing skipped: no summary, and a run that passed is not failed. A
// skip for another reason gets no run line.
func TestSummariser_NoServiceSkips(t *testing.T) {
	s := New(new(bytes.Buffer), false)
	require.NoError(t, s.Read(strings.NewReader(
		`{"Action":"output","Package":"p","Output":"ok  \tp\t0.1s\n"}`+"\n"+`{"Action":"pass","Package":"p"}`+"\n")))
	require.False(t, s.Failed())
	require.Empty(t, s.Summary())

	s = New(new(bytes.Buffer), false)
	require.NoError(t, s.Read(strings.NewReader(""+
		`{"Action":"output","Package":"p","Test":"T","Output":"    x_test.go:3: mosquitto is not installed\n"}`+"\n"+
		`{"Action":"skip","Package":"p","Test":"T"}`+"\n"+
		`{"Action":"output","Package":"p","Test":"U","Output":"--- SKIP: U (0.00s)\n"}`+"\n"+
		`{"Action":"skip","Package":"p","Test":"U"}`+"\n")))
	require.Equal(t, "\nSKIPPED: 2 tests, by reason:\n"+
		"  1: (no reason given)\n     in p (1)\n"+
		"  1: mosquitto is not installed\n     in p (1)\n", s.Summary())
}

// A package that panics or times out ends with tests that never
// finished: their output is what explains the failure.
func TestSummariser_UnfinishedTestsOfAFailedPackage(t *testing.T) {
	var out bytes.Buffer
	s := New(&out, false)
	require.NoError(t, s.Read(strings.NewReader(""+
		`{"Action":"build-output","ImportPath":"p","Output":"# p\n"}`+"\n"+
		`{"Action":"output","Package":"q","Test":"T","Output":"=== RUN   T\n"}`+"\n"+
		`{"Action":"output","Package":"q","Test":"T","Output":"panic: test timed out after 1s\n"}`+"\n"+
		`{"Action":"output","Package":"q","Output":"FAIL\tq\t1.0s\n"}`+"\n"+
		`{"Action":"fail","Package":"q"}`+"\n"+
		"not json\n")))
	require.True(t, s.Failed())
	require.Equal(t, "# p\nFAIL\tq\t1.0s\npanic: test timed out after 1s\nnot json\n", out.String())
}

// The format the summariser reads is go test's: a package of the cases
// above, run by the go command that runs these tests.
func TestSummariser_RealGoTest(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test")
	}
	dir := t.TempDir()
	write := func(name, text string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	write("go.mod", "module github.com/svc-vms/svc/cloud/postgres\n\ngo 1.24\n")
	write("a_test.go", `package a

import "testing"

func need(t *testing.T) {
	t.Helper()
	t.Skip("SVC_TEST_POSTGRES_URL is not set")
}

func TestPass(t *testing.T) { t.Log("quiet") }
func TestSkip(t *testing.T) { t.Log("first"); need(t) }
func TestSub(t *testing.T) {
	t.Run("x", func(t *testing.T) { t.Skipf("%s is not set", "SVC_TEST_MQTT_URL") })
	t.Run("y", func(t *testing.T) { t.Skip("SVC_TEST_MQTT_URL is not set") })
}
`)
	cmd := exec.Command("go", "test", "-json", "-count=1", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	stream, err := cmd.Output()
	require.NoError(t, err, "%s", stream)

	var out bytes.Buffer
	s := New(&out, false)
	require.NoError(t, s.Read(bytes.NewReader(stream)))
	require.False(t, s.Failed())
	require.Regexp(t, "^ok  \tgithub.com/svc-vms/svc/cloud/postgres\t[0-9.]+s\n$", out.String())
	require.Equal(t, "\n"+
		"SKIPPED: 3 tests, by reason:\n"+
		"  2: SVC_TEST_MQTT_URL is not set\n"+
		"     in cloud/postgres (2)\n"+
		"  1: SVC_TEST_POSTGRES_URL is not set\n"+
		"     in cloud/postgres (1)\n"+
		"The PostgreSQL and Mosquitto suites did not run. With both services on this machine, run them with:\n"+
		"  "+RunLine+"\n", s.Summary())
}
