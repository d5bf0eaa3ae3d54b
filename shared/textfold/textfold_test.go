package textfold

import (
	"slices"
	"testing"
)

func TestFold(t *testing.T) {
	for in, want := range map[string]string{
		"Élodie  MÜLLER":      "elodie muller",
		"  Søren Kierkegaard": "soren kierkegaard",
		"Jean-Luc O'Brien":    "jean luc o brien",
		"Łukasz Żółć":         "lukasz zolc",
		"":                    "",
		"--":                  "",
		"Zoë 2":               "zoe 2",
	} {
		if got := Fold(in); got != want {
			t.Errorf("Fold(%q) = %q, want %q", in, got, want)
		}
	}
	if got := Words("Ana María  de la Cruz"); !slices.Equal(got, []string{"ana", "maria", "de", "la", "cruz"}) {
		t.Errorf("Words = %q", got)
	}
	if Letters("é-1 ") != 2 {
		t.Error("Letters counts letters and digits")
	}
}
