package reader_test

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/skip2/go-qrcode"
	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/gate/reader"
)

const token = "P1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"

func qrPNG(t *testing.T, text string) []byte {
	t.Helper()
	b, err := qrcode.Encode(text, qrcode.Medium, 320)
	require.NoError(t, err)
	return b
}

func blankPNG(t *testing.T) []byte {
	t.Helper()
	img := image.NewGray(image.Rect(0, 0, 200, 200))
	for i := range img.Pix {
		img.Pix[i] = 0xee
	}
	img.Set(10, 10, color.Black)
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, img))
	return buf.Bytes()
}

// framesServer serves the handler on the pattern the edge mounts it on.
func framesServer(t *testing.T, cfg reader.FramesConfig) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("POST /gates/{gate_id}/frames", reader.NewFrames(cfg))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func post(t *testing.T, srv *httptest.Server, gate string, body []byte, contentType string) (int, map[string]any) {
	t.Helper()
	resp, err := srv.Client().Post(srv.URL+"/gates/"+gate+"/frames", contentType, bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	var out map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return resp.StatusCode, out
}

func TestFrames(t *testing.T) {
	s := newScanned()
	at := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	var gotAt time.Time
	srv := framesServer(t, reader.FramesConfig{
		Gates:    func(id string) bool { return id == gateID },
		Deliver:  func(ctx context.Context, g, text string, when time.Time) { gotAt = when; s.deliver(ctx, g, text, when) },
		MaxBytes: 64 << 10,
		Now:      func() time.Time { return at },
	})

	code, body := post(t, srv, gateID, qrPNG(t, token), "image/png")
	require.Equal(t, http.StatusOK, code, body)
	require.Equal(t, map[string]any{"gate_id": gateID, "scanned": true}, body)
	require.Equal(t, token, s.next(t))
	require.Equal(t, []string{gateID}, s.gates)
	require.Equal(t, at, gotAt)

	for _, tc := range []struct {
		name   string
		gate   string
		body   []byte
		status int
		code   string
	}{
		{"no code in the frame", gateID, blankPNG(t), http.StatusUnprocessableEntity, "no_code"},
		{"not an image", gateID, []byte("GIF89a not really"), http.StatusUnsupportedMediaType, "unsupported_media_type"},
		{"over the size limit", gateID, append(qrPNG(t, token), make([]byte, 64<<10)...), http.StatusRequestEntityTooLarge, "too_large"},
		{"gate without a camera", "gate_01m7ym407qfqptfsbz8t3m6nw2", qrPNG(t, token), http.StatusNotFound, "not_found"},
	} {
		code, body := post(t, srv, tc.gate, tc.body, "image/png")
		require.Equal(t, tc.status, code, tc.name)
		require.Equal(t, tc.code, body["code"], tc.name)
		require.NotEmpty(t, body["error"], tc.name)
	}
	require.Len(t, s.texts, 1, "only the first frame was a scan")

	resp, err := srv.Client().Get(srv.URL + "/gates/" + gateID + "/frames")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
}

// TestFrames_Busy: with every decode slot taken, a frame is refused at once.
func TestFrames_Busy(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	srv := framesServer(t, reader.FramesConfig{
		Gates:   func(string) bool { return true },
		Decodes: 1,
		Deliver: func(context.Context, string, string, time.Time) { close(entered); <-release },
	})
	first := make(chan int)
	go func() {
		resp, err := srv.Client().Post(srv.URL+"/gates/"+gateID+"/frames", "image/png", bytes.NewReader(qrPNG(t, token)))
		if err != nil {
			first <- 0
			return
		}
		resp.Body.Close()
		first <- resp.StatusCode
	}()
	<-entered
	code, body := post(t, srv, gateID, qrPNG(t, token), "image/png")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Equal(t, "busy", body["code"])
	close(release)
	require.Equal(t, http.StatusOK, <-first)
	code, _ = post(t, srv, gateID, blankPNG(t), "image/png")
	require.Equal(t, http.StatusUnprocessableEntity, code, "the slot is free again")
}
