package gosource

import (
	"os"
	"path/filepath"
	"testing"
)

func TestConsts(t *testing.T) {
	dir := t.TempDir()
	src := `package p

type Kind string

const (
	KindA Kind = "a"
	KindB Kind = "b\t"
	n          = 3
)

const Plain, Other = "x", 2
`
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "p_test.go"), []byte("package p\n\nconst Test = \"t\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Consts(dir)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "p.go")
	want := []Const{
		{Name: "KindA", Type: "Kind", File: file, Value: "a", String: true},
		{Name: "KindB", Type: "Kind", File: file, Value: "b\t", String: true},
		{Name: "n", File: file},
		{Name: "Plain", File: file, Value: "x", String: true},
		{Name: "Other", File: file},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d constants %+v, want %d (a test file's are not read)", len(got), got, len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("constant %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}
