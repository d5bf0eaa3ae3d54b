package httpapi_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud/httpapi"
)

// serveReal serves the harness's API on a real loopback listener with
// the given limits and returns its address.
func serveReal(t *testing.T, h *harness, l httpapi.ServerLimits) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := httpapi.NewHTTPServer(h.api, l, nil)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(httpapi.Listen(ln, l)) }()
	t.Cleanup(func() {
		require.NoError(t, srv.Close())
		require.ErrorIs(t, <-done, http.ErrServerClosed)
	})
	return ln.Addr().String()
}

// generous bounds every wait on the server: far above the limits the tests
// configure, so only a server that never acts exceeds it.
const generous = 10 * time.Second

// closedOrAnswered reads from c until the server answers and closes the
// connection; it fails if nothing happens within generous.
func closedOrAnswered(t *testing.T, c net.Conn) (*http.Response, []byte) {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(generous)))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	var body []byte
	if err == nil {
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		_, err = br.ReadByte()
	}
	var ne net.Error
	require.False(t, errors.As(err, &ne) && ne.Timeout(), "the server neither answered nor closed the connection within %s: %v", generous, err)
	require.Error(t, err, "the connection is closed after the answer")
	return resp, body
}

// A client that sends its headers and then trickles the body is cut off
// when the server's read timeout ends: it gets 400 bad_request (the body
// did not arrive) and the connection is closed, instead of holding it for
// as long as it keeps trickling.
func TestServer_TrickledBodyIsCutOff(t *testing.T) {
	h := newHarness(t, stores[0].open)
	addr := serveReal(t, h, httpapi.ServerLimits{ReadTimeout: 300 * time.Millisecond})

	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	_, err = fmt.Fprintf(c, "PATCH /v1/people/%s HTTP/1.1\r\nHost: svc\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"name\":\"",
		h.seed.Test.People[0], h.seed.Keys.SecretTest)
	require.NoError(t, err)
	stop := make(chan struct{})
	defer close(stop)
	go func() { // a byte every 20 ms until the server closes the connection
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if _, err := c.Write([]byte("a")); err != nil {
					return
				}
			}
		}
	}()
	resp, body := closedOrAnswered(t, c)
	require.NotNil(t, resp, "an answer before the close")
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"))
	require.Contains(t, string(body), "read timeout")
}

// One client address has at most MaxConnsPerAddr connections open: the
// next is closed as soon as it is accepted, while another address (here
// 127.0.0.2, which Linux's loopback answers from) is served; closing one
// gives its place back; an exempt address (a trusted proxy) is not limited.
func TestServer_ConnectionsPerAddressAreLimited(t *testing.T) {
	h := newHarness(t, stores[0].open)
	addr := serveReal(t, h, httpapi.ServerLimits{MaxConnsPerAddr: 2})
	from := func(local string) (net.Conn, error) {
		d := net.Dialer{Timeout: generous, LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
		return d.Dial("tcp", addr)
	}
	// get sends one request on c and reads the answer, keeping c open.
	get := func(c net.Conn) (int, error) {
		if err := c.SetDeadline(time.Now().Add(generous)); err != nil {
			return 0, err
		}
		if _, err := fmt.Fprintf(c, "GET /v1/sites HTTP/1.1\r\nHost: svc\r\nAuthorization: Bearer %s\r\n\r\n", h.seed.Keys.SecretTest); err != nil {
			return 0, err
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		_, err = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, err
	}

	var held []net.Conn
	for range 2 {
		c, err := from("127.0.0.1")
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		status, err := get(c) // answered: the server holds it now
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, status)
		held = append(held, c)
	}
	extra, err := from("127.0.0.1")
	require.NoError(t, err, "the kernel accepts; the server closes")
	defer extra.Close()
	_, err = get(extra)
	require.Error(t, err, "the third connection from one address is closed unanswered")
	var ne net.Error
	require.False(t, errors.As(err, &ne) && ne.Timeout(), "closed, not left hanging: %v", err)

	other, err := from("127.0.0.2")
	if err != nil {
		t.Skipf("cannot connect from 127.0.0.2: %v", err)
	}
	defer other.Close()
	status, err := get(other)
	require.NoError(t, err, "another address is served")
	require.Equal(t, http.StatusOK, status)

	// Closing one gives its place back once the server sees it closed.
	require.NoError(t, held[0].Close())
	deadline := time.Now().Add(generous)
	for {
		c, err := from("127.0.0.1")
		require.NoError(t, err)
		status, err := get(c)
		c.Close()
		if err == nil {
			require.Equal(t, http.StatusOK, status)
			break
		}
		require.True(t, time.Now().Before(deadline), "no place was given back within %s: %v", generous, err)
	}

	// Exempt addresses are not counted.
	proxied := serveReal(t, h, httpapi.ServerLimits{MaxConnsPerAddr: 1, Exempt: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	for range 3 {
		c, err := net.DialTimeout("tcp", proxied, generous)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		status, err := get(c)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, status)
	}
}
