package logging_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"strings"
	"testing"

	"github.com/svc-vms/svc/shared/logging"
)

func TestConfig_Validate(t *testing.T) {
	for _, tc := range []struct {
		cfg  logging.Config
		want string // "" for valid, else a part of the error
	}{
		{logging.Config{Format: "text", Level: "info"}, ""},
		{logging.Config{Format: "json", Level: "debug"}, ""},
		{logging.Config{Format: "json", Level: "WARN"}, ""},
		{logging.Config{Format: "logfmt", Level: "info"}, `--log-format "logfmt"`},
		{logging.Config{Format: "", Level: "info"}, `--log-format ""`},
		{logging.Config{Format: "text", Level: "loud"}, `--log-level "loud"`},
	} {
		err := tc.cfg.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v", tc.cfg, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: got %v, want an error naming %s", tc.cfg, err, tc.want)
		}
	}
}

func TestConfig_NewJSON(t *testing.T) {
	var buf bytes.Buffer
	log := logging.Config{Format: "json", Level: "warn"}.New(&buf)
	log.Info("dropped below the level")
	log.Warn("kept", "request_id", "req_1")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("want one line (info is below warn), got %q", buf.String())
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatalf("not JSON: %q: %v", lines[0], err)
	}
	if rec["msg"] != "kept" || rec["level"] != "WARN" || rec["request_id"] != "req_1" {
		t.Errorf("record %v", rec)
	}
}

func TestConfig_NewText(t *testing.T) {
	var buf bytes.Buffer
	logging.Config{Format: "text", Level: "debug"}.New(&buf).Debug("shown", "key_id", "key_1")
	if got := buf.String(); !strings.Contains(got, "level=DEBUG msg=shown key_id=key_1") {
		t.Errorf("text line %q", got)
	}
}

func TestConfig_RegisterReadsEnvironment(t *testing.T) {
	t.Setenv("SVC_LOG_FORMAT", "json")
	t.Setenv("SVC_LOG_LEVEL", "error")
	var c logging.Config
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	c.Register(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if c.Format != "json" || c.Level != "error" {
		t.Fatalf("from the environment: %+v", c)
	}
	// A flag wins over the variable.
	if err := fs.Parse([]string{"--log-format", "text"}); err != nil {
		t.Fatal(err)
	}
	if c.Format != "text" {
		t.Fatalf("flag: %+v", c)
	}
}
