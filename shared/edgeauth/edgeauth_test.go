package edgeauth

import (
	"crypto/ed25519"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestSignVerify(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(nil)
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{"public_key":"x"}`)
	signed := func() *http.Request {
		r := httptest.NewRequest("POST", "https://cloud.example/v1/enrolments/self?wait=30", nil)
		Sign(r, body, priv, now)
		return r
	}
	got, err := Verify(signed(), now.Add(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if !got.Key.Equal(pub) || string(got.Body) != string(body) || got.Skew != -2*time.Second {
		t.Errorf("verified %+v", got)
	}

	for name, tamper := range map[string]func(r *http.Request){
		"body":   func(r *http.Request) { r.Body = io.NopCloser(strings.NewReader(`{"public_key":"y"}`)) },
		"path":   func(r *http.Request) { r.URL.Path = "/v1/releases/1" },
		"query":  func(r *http.Request) { r.URL.RawQuery = "wait=31" },
		"method": func(r *http.Request) { r.Method = "GET" },
		"time":   func(r *http.Request) { r.Header.Set(HeaderTime, "1800000001") },
		"key": func(r *http.Request) {
			other, _, _ := ed25519.GenerateKey(nil)
			r.Header.Set(HeaderKey, EncodeKey(other))
		},
	} {
		r := signed()
		tamper(r)
		if _, err := Verify(r, now); !errors.Is(err, ErrBadSignature) {
			t.Errorf("%s tampered: %v", name, err)
		}
	}
	if _, err := Verify(signed(), now.Add(MaxSkew+time.Second)); !errors.Is(err, ErrSkew) {
		t.Errorf("old request: %v", err)
	}
	if _, err := Verify(httptest.NewRequest("GET", "/v1/enrolments/self", nil), now); !errors.Is(err, ErrMissing) {
		t.Errorf("unsigned: %v", err)
	}
	for _, h := range []string{HeaderKey, HeaderTime, HeaderSignature} {
		r := signed()
		r.Header.Set(h, "!!")
		if _, err := Verify(r, now); !errors.Is(err, ErrMalformed) {
			t.Errorf("malformed %s: %v", h, err)
		}
	}
}
