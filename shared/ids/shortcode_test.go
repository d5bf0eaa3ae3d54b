package ids

import "testing"

func TestShortCode_LastEightOfTheSuffix(t *testing.T) {
	id := "visit_01h455vb4pex5vsknk084sn02q"
	if got := ShortCode(id); got != "084SN02Q" {
		t.Fatalf("ShortCode = %q, want 084SN02Q", got)
	}
	if got := FormatShortCode(ShortCode(id)); got != "084S-N02Q" {
		t.Fatalf("FormatShortCode = %q", got)
	}
	if ShortCode("person_01h455vb4pex5vsknk084sn02q") != "" {
		t.Fatal("a person ID has a short code")
	}
}

func TestNormalizeShortCode(t *testing.T) {
	for in, want := range map[string]string{
		"k084-sn02": "K084SN02", " K084 SN02 ": "K084SN02", "kO84-sNO2": "K084SN02", "il00-0000": "1100" + "0000",
	} {
		if got, ok := NormalizeShortCode(in); !ok || got != want {
			t.Errorf("NormalizeShortCode(%q) = %q, %t; want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "K084SN0", "K084SN023", "K084SNU2", "K084SN0é", "K084_SN02"} {
		if got, ok := NormalizeShortCode(in); ok {
			t.Errorf("NormalizeShortCode(%q) = %q, accepted", in, got)
		}
	}
}
