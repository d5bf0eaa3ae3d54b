package main

import (
	"strings"
	"testing"
)

// TestNTPServers: svc.txt's list, trimmed, or the pool when it names none.
func TestNTPServers(t *testing.T) {
	for in, want := range map[string][]string{
		"":                            defaultNTP,
		" , ":                         defaultNTP,
		"ntp.example.com":             {"ntp.example.com"},
		"10.0.0.1, ntp.example.com,,": {"10.0.0.1", "ntp.example.com"},
	} {
		if got := ntpServers(in); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("ntpServers(%q) = %q, want %q", in, got, want)
		}
	}
}
