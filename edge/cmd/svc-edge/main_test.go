package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skip2/go-qrcode"
	"github.com/stretchr/testify/require"
)

const example = "../../config/testdata/example.json"

// runCLI runs svc-edge with args and returns its exit code and output.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runCLIStdin(t, "", args...)
}

// runCLIStdin runs svc-edge with args and stdin.
func runCLIStdin(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

// writeQR writes a PNG of a QR code holding text.
func writeQR(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "pass.png")
	require.NoError(t, qrcode.WriteFile(text, qrcode.Medium, 256, path))
	return path
}

func TestQRDecode_AllDecoded(t *testing.T) {
	a := writeQR(t, "svc1.pass-token-one")
	b := writeQR(t, "https://example.com/p?x=1")
	code, out, errOut := runCLI(t, "qr", "decode", a, b)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "svc1.pass-token-one\nhttps://example.com/p?x=1\n", out)
	require.Empty(t, errOut)
}

func TestQRDecode_NotAnImage(t *testing.T) {
	good := writeQR(t, "svc1.pass-token")
	bad := filepath.Join(t.TempDir(), "notes.txt")
	require.NoError(t, os.WriteFile(bad, []byte("not an image"), 0o600))
	code, out, errOut := runCLI(t, "qr", "decode", good, bad, filepath.Join(t.TempDir(), "missing.png"))
	require.Equal(t, 1, code)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.Len(t, lines, 3, "one line per file, in order")
	require.Equal(t, "svc1.pass-token", lines[0])
	require.True(t, strings.HasPrefix(lines[1], "error: "+bad+": "), lines[1])
	require.True(t, strings.HasPrefix(lines[2], "error: "), lines[2])
	require.Contains(t, errOut, "2 of 3 files")
}

func TestQRDecode_Usage(t *testing.T) {
	code, out, errOut := runCLI(t, "qr", "decode")
	require.Equal(t, 2, code)
	require.Empty(t, out)
	require.Contains(t, errOut, "name at least one image file")

	code, _, errOut = runCLI(t, "qr", "decode", "--focus", "x.png")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "flag provided but not defined: -focus")

	code, _, errOut = runCLI(t, "qr", "decode", "-h")
	require.Equal(t, 0, code)
	require.Contains(t, errOut, "usage: svc-edge qr decode FILE...")
}

func TestConfigCheck_Valid(t *testing.T) {
	code, out, errOut := runCLI(t, "config", "check", "--config", example)
	require.Equal(t, 0, code, errOut)
	require.Empty(t, errOut)
	require.NotContains(t, out, "example-broker-secret")
	var doc struct {
		EdgeID string `json:"edge_id"`
		Broker struct {
			Password     string `json:"password"`
			PasswordFile string `json:"password_file"`
		} `json:"broker"`
		Gates []struct {
			WhenStale string `json:"when_stale"`
		} `json:"gates"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
	require.Equal(t, "edge_01m7ym407qfqnvr6tca7k4z2y5", doc.EdgeID)
	require.Equal(t, "***", doc.Broker.Password)
	require.Equal(t, filepath.Join(filepath.Dir(example), "broker-password"), doc.Broker.PasswordFile)
	require.Len(t, doc.Gates, 2)
	require.Equal(t, "fail_secure", doc.Gates[0].WhenStale)
}

func TestConfigCheck_EnvOverride(t *testing.T) {
	t.Setenv("SVC_EDGE_CONFIG", example)
	t.Setenv("SVC_EDGE_BROKER_PASSWORD", "from-env-secret")
	t.Setenv("SVC_EDGE_LISTEN", "127.0.0.1:8099")
	code, out, errOut := runCLI(t, "config", "check")
	require.Equal(t, 0, code, errOut)
	require.NotContains(t, out, "from-env-secret")
	require.Contains(t, out, `"password": "***"`)
	require.Contains(t, out, `"listen": "127.0.0.1:8099"`)
	require.NotContains(t, out, "password_file", "the variable replaces the file's password_file")
}

func TestConfigCheck_Problems(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.json")
	data, err := os.ReadFile(example)
	require.NoError(t, err)
	bad := strings.Replace(string(data), `"mode": "live"`, `"mode": "prod"`, 1)
	bad = strings.Replace(bad, `"GPIO22"`, `"GPIO17"`, 1)
	bad = strings.Replace(bad, `"when_stale": "fail_open"`, `"when_stale": "open", "colour": "red"`, 1)
	bad = strings.Replace(bad, `"password_file": "broker-password"`, `"password": "hunter2"`, 1)
	bad = strings.Replace(bad, ",\n    \"ca_file\": \"broker-ca.pem\"", "", 1) // not beside the copy
	require.NoError(t, os.WriteFile(path, []byte(bad), 0o600))

	code, out, errOut := runCLI(t, "config", "check", "--config", path)
	require.Equal(t, 1, code)
	require.Empty(t, out)
	require.Contains(t, errOut, "svc-edge: config "+path+": 4 problems:")
	for _, want := range []string{
		`site.mode: "prod": must be live or test`,
		"gates[1].relay.pin: pin GPIO17 is already used at gates[0].relay.pin",
		`gates[1].when_stale: "open": want fail_secure or fail_open`,
		"gates[1].colour: unknown field",
	} {
		require.Contains(t, errOut, "\n  "+want+"\n", errOut)
	}
	require.NotContains(t, errOut, "hunter2")
}

func TestConfigCheck_Errors(t *testing.T) {
	code, out, errOut := runCLI(t, "config", "check", "--config", filepath.Join(t.TempDir(), "none.json"))
	require.Equal(t, 1, code)
	require.Empty(t, out)
	require.Contains(t, errOut, "no such file or directory")

	code, _, errOut = runCLI(t, "config", "check", "--config", example, "extra")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, `unexpected argument "extra"`)

	code, _, _ = runCLI(t, "config", "check", "--conf", example)
	require.Equal(t, 2, code)
}

func TestRun_Usage(t *testing.T) {
	for _, args := range [][]string{nil, {"qr"}, {"qr", "encode"}, {"config"}, {"config", "show"}, {"frobnicate"}} {
		code, out, errOut := runCLI(t, args...)
		require.Equal(t, 2, code, "%q", args)
		require.Empty(t, out)
		require.Contains(t, errOut, "usage:\n  svc-edge enrol --cloud URL", "%q", args)
		require.Contains(t, errOut, "\n  svc-edge run [--config FILE]", "%q", args)
		require.Contains(t, errOut, "\n  svc-edge qr decode FILE...", "%q", args)
	}
	code, out, errOut := runCLI(t, "help")
	require.Equal(t, 0, code, "asked-for help is not a mistake")
	require.Contains(t, out, "svc-edge config check")
	require.Empty(t, errOut)
}
