package ids_test

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	"go.jetify.com/typeid"

	"github.com/svc-vms/svc/shared/ids"
)

// vector is one entry of the TypeID specification's test files.
type vector struct{ name, typeid, prefix, uuid string }

// readVectors reads the spec's YAML files, which hold a flat list of
// "- name:" entries with quoted string fields.
func readVectors(t *testing.T, path string) []vector {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer f.Close()
	var out []vector
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		if strings.HasPrefix(line, "- name:") {
			out = append(out, vector{name: strings.TrimSpace(strings.TrimPrefix(line, "- name:"))})
			continue
		}
		key, value, ok := strings.Cut(line, ":")
		if !ok || len(out) == 0 {
			continue
		}
		value = strings.Trim(strings.TrimSpace(value), `"`)
		v := &out[len(out)-1]
		switch key {
		case "typeid":
			v.typeid = value
		case "prefix":
			v.prefix = value
		case "uuid":
			v.uuid = value
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("no vectors in %s", path)
	}
	return out
}

const vectors = "testdata/"

func TestValid_SpecVectors(t *testing.T) {
	for _, v := range readVectors(t, vectors+"valid.yml") {
		t.Run("valid/"+v.name, func(t *testing.T) {
			id, err := typeid.FromString(v.typeid)
			if err != nil {
				t.Fatalf("typeid.FromString(%q): %v", v.typeid, err)
			}
			if id.UUID() != v.uuid {
				t.Errorf("uuid = %s, want %s", id.UUID(), v.uuid)
			}
			// Our check takes the spec's pattern, which needs a prefix:
			// give the prefix-less vectors one.
			prefixed := v.typeid
			prefix := v.prefix
			if prefix == "" {
				prefix = "visit"
				prefixed = "visit_" + v.typeid
			}
			// The pattern starts the suffix with 0-7, as every vector does.
			if !ids.Valid(prefix, prefixed) {
				t.Errorf("ids.Valid(%q, %q) = false", prefix, prefixed)
			}
		})
	}
	for _, v := range readVectors(t, vectors+"invalid.yml") {
		t.Run("invalid/"+v.name, func(t *testing.T) {
			// Valid checks against the API's own prefixes, which are valid
			// TypeID prefixes: none of them lets an invalid ID through.
			for _, p := range []string{"prefix", ids.Visit, ids.Team, ids.Person, ids.Site, ids.Request} {
				if ids.Valid(p, v.typeid) {
					t.Errorf("ids.Valid(%q, %q) = true", p, v.typeid)
				}
			}
		})
	}
}

func TestValid_Pattern(t *testing.T) {
	good := ids.New(ids.Team)
	cases := map[string]bool{
		good:                                   true,
		"team_01h2xcejqtf2nbrexx3vqjhp41":      true,
		"team_81h2xcejqtf2nbrexx3vqjhp41":      false, // first suffix character above 7
		"team_01h2xcejqtf2nbrexx3vqjhp4":       false, // short
		"team_01h2xcejqtf2nbrexx3vqjhp411":     false, // long
		"team_01H2XCEJQTF2NBREXX3VQJHP41":      false, // upper case
		"team_01h2xcejqtf2nbrexx3vqjhpil":      false, // i and l are not in the alphabet
		"person_01h2xcejqtf2nbrexx3vqjhp41":    false, // another prefix
		"teams_01h2xcejqtf2nbrexx3vqjhp41":     false,
		"team-01h2xcejqtf2nbrexx3vqjhp41":      false,
		"":                                     false,
		"team_":                                false,
		"team_01h2xcejqtf2nbrexx3vqjhp4\u00e9": false,
	}
	for s, want := range cases {
		if got := ids.Valid(ids.Team, s); got != want {
			t.Errorf("Valid(team, %q) = %v, want %v", s, got, want)
		}
	}
}

func TestNew_RoundTrips(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		s := ids.New(ids.Visit)
		if !ids.Valid(ids.Visit, s) || seen[s] {
			t.Fatalf("New = %q: invalid or repeated", s)
		}
		seen[s] = true
		id, err := typeid.FromString(s)
		if err != nil || id.String() != s {
			t.Fatalf("round trip of %q: %v", s, err)
		}
	}
}

func FuzzValid(f *testing.F) {
	f.Add("team_01h2xcejqtf2nbrexx3vqjhp41")
	f.Add("team_")
	f.Fuzz(func(t *testing.T, s string) {
		if !ids.Valid(ids.Team, s) {
			return
		}
		// Whatever Valid accepts, the reference implementation parses.
		if _, err := typeid.FromString(s); err != nil {
			t.Fatalf("Valid accepted %q, typeid rejects it: %v", s, err)
		}
	})
}

// New's suffix is a UUIDv7 as the typeid library makes one: version 7,
// the RFC 9562 variant, the time of the call in its first 48 bits, never
// repeated; and it allocates only the string.
func TestNew_UUIDv7InOrder(t *testing.T) {
	before := time.Now().UnixMilli()
	seen := map[string]bool{}
	for range 1000 {
		s := ids.New(ids.Fact)
		id, err := typeid.FromString(s)
		if err != nil {
			t.Fatalf("parse %q: %v", s, err)
		}
		u, err := hex.DecodeString(strings.ReplaceAll(id.UUID(), "-", ""))
		if err != nil || len(u) != 16 {
			t.Fatalf("%q: uuid %q: %v", s, id.UUID(), err)
		}
		if u[6]>>4 != 7 || u[8]>>6 != 0b10 {
			t.Fatalf("%q: version %d, variant %b", s, u[6]>>4, u[8]>>6)
		}
		ms := int64(binary.BigEndian.Uint64(u[:8]) >> 16)
		if ms < before || ms > time.Now().UnixMilli() {
			t.Fatalf("%q: time %d, not between %d and now", s, ms, before)
		}
		if seen[s] {
			t.Fatalf("%q repeated", s)
		}
		seen[s] = true
	}
	if n := testing.AllocsPerRun(100, func() { _ = ids.New(ids.Fact) }); n != 1 {
		t.Fatalf("New allocates %v times; want 1", n)
	}
}

func TestNew_EmptyPrefix(t *testing.T) {
	s := ids.New("")
	id, err := typeid.FromString(s)
	if err != nil || id.Prefix() != "" || id.String() != s {
		t.Fatalf("New(\"\") = %q: %v", s, err)
	}
}
