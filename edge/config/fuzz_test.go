package config_test

import (
	"os"
	"testing"

	"github.com/svc-vms/svc/edge/config"
)

// FuzzParse feeds Parse, which is Load after reading the file, arbitrary
// bytes: it must never panic, and it returns a Config or an *Error with at
// least one problem, never both or neither.
func FuzzParse(f *testing.F) {
	example, err := os.ReadFile("testdata/example.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(example)
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"gates":[{"readers":[{"kind":"serial","baud":1e400}],"door":null}]}`))
	f.Add([]byte(`{"broker":{"url":"tcp://[::1","password_file":"/dev/zero"}}`))
	f.Add([]byte(`[{"site":1}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := config.Parse(data, config.Options{Dir: "testdata", LookupEnv: noEnv})
		if (cfg == nil) == (err == nil) {
			t.Fatalf("Parse returned config %v and error %v", cfg, err)
		}
		if err != nil {
			cerr, ok := err.(*config.Error)
			if !ok || len(cerr.Problems) == 0 {
				t.Fatalf("error %T %v is not an *Error with problems", err, err)
			}
			_ = err.Error()
			return
		}
		if _, err := cfg.MarshalJSON(); err != nil {
			t.Fatalf("marshal a valid config: %v", err)
		}
	})
}
