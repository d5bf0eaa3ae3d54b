// Package dynsectest runs a private Mosquitto with its dynamic security
// plugin for a test: Debian's mosquitto package (the mosquitto program and
// mosquitto_dynamic_security.so). Without them the test is skipped, or
// fails when SVC_TEST_REQUIRE_SERVICES=1 (CI, which installs the package).
// SVC_TEST_MOSQUITTO and SVC_TEST_MOSQUITTO_DYNSEC name the program and the
// plugin when they are elsewhere.
//
// It may import the standard library, github.com/eclipse/paho.mqtt.golang
// and sync/protocol.
package dynsectest

import (
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/svc-vms/svc/shared/lockedbuf"
	"github.com/svc-vms/svc/sync/protocol"
)

// Admin is the plugin's admin client in every Broker.
const Admin = "dynsec-admin"

// Broker is a Mosquitto of a test's own, on a free loopback port, that
// allows no anonymous client and keeps its accounts in the plugin's file
// in a temporary directory, so they survive Stop and Start.
type Broker struct {
	URL           string // tcp://127.0.0.1:PORT
	Addr          string // 127.0.0.1:PORT
	AdminPassword string // Admin's

	t    testing.TB
	bin  string
	conf string
	log  *lockedbuf.Buffer

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

// Start starts a Broker until t ends, or skips t (fails it under
// SVC_TEST_REQUIRE_SERVICES=1) when Mosquitto or the plugin is missing.
// Its default ACL access is the plugin's: publishing and subscribing
// denied, receiving and unsubscribing allowed.
func Start(t testing.TB) *Broker {
	t.Helper()
	return start(t, false)
}

// StartOpen is Start with a default ACL access that allows everything, as
// a careless operator may set it: a client is confined only by its roles.
func StartOpen(t testing.TB) *Broker {
	t.Helper()
	return start(t, true)
}

func start(t testing.TB, open bool) *Broker {
	t.Helper()
	bin, plugin := find(t)
	dir := t.TempDir()
	pw := rand.Text()
	state := filepath.Join(dir, "dynamic-security.json")
	if err := os.WriteFile(state, initial(pw, open), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	conf := filepath.Join(dir, "mosquitto.conf")
	// As docs/decisions.md's production configuration, on loopback and
	// without TLS.
	if err := os.WriteFile(conf, fmt.Appendf(nil, `user root
per_listener_settings false
listener %d 127.0.0.1
allow_anonymous false
plugin %s
plugin_opt_config_file %s
persistence false
max_packet_size %d
max_inflight_messages 100
max_queued_messages 100000
log_dest stderr
log_type error
log_type warning
log_type notice
log_type information
`, port, plugin, state, protocol.MaxMessage+4<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	b := &Broker{URL: "tcp://" + addr, Addr: addr, AdminPassword: pw, t: t, bin: bin, conf: conf, log: &lockedbuf.Buffer{}}
	t.Cleanup(func() {
		b.stop(false)
		if t.Failed() {
			t.Logf("mosquitto's log:\n%s", b.log.String())
		}
	})
	b.Start()
	return b
}

// find returns the mosquitto program and the plugin, or ends t.
func find(t testing.TB) (string, string) {
	t.Helper()
	missing := func(what string) {
		if os.Getenv("SVC_TEST_REQUIRE_SERVICES") == "1" {
			t.Fatalf("%s is not installed (apt-get install mosquitto)", what)
		}
		t.Skipf("%s is not installed (apt-get install mosquitto)", what)
	}
	bin := os.Getenv("SVC_TEST_MOSQUITTO")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("mosquitto"); err != nil {
			bin = "/usr/sbin/mosquitto" // Debian's, off a user's PATH
		}
	}
	if _, err := os.Stat(bin); err != nil {
		missing("mosquitto")
	}
	plugin := os.Getenv("SVC_TEST_MOSQUITTO_DYNSEC")
	if plugin == "" {
		for _, pattern := range []string{"/usr/lib/*/mosquitto_dynamic_security.so", "/usr/lib/mosquitto_dynamic_security.so",
			"/usr/local/lib/mosquitto_dynamic_security.so", "/usr/local/lib/*/mosquitto_dynamic_security.so"} {
			if m, _ := filepath.Glob(pattern); len(m) > 0 {
				plugin = m[0]
				break
			}
		}
	}
	if plugin == "" {
		missing("Mosquitto's dynamic security plugin (mosquitto_dynamic_security.so)")
	}
	return bin, plugin
}

// initial is the plugin's file as mosquitto_ctrl dynsec init writes it:
// Admin, with password pw and the admin role, and the plugin's default
// ACL access, or one that allows everything when open.
func initial(pw string, open bool) []byte {
	salt := make([]byte, 12)
	_, _ = rand.Read(salt)
	const iterations = 101
	hash, err := pbkdf2.Key(sha512.New, pw, salt, iterations, sha512.Size)
	if err != nil {
		panic(err) // only for a bad key length
	}
	acl := func(typ, topic string) map[string]any {
		return map[string]any{"acltype": typ, "topic": topic, "allow": true}
	}
	doc := map[string]any{
		"clients": []any{map[string]any{"username": Admin, "textName": "Dynsec admin user",
			"password": base64.StdEncoding.EncodeToString(hash), "salt": base64.StdEncoding.EncodeToString(salt),
			"iterations": iterations, "roles": []any{map[string]any{"rolename": "admin"}}}},
		"roles": []any{map[string]any{"rolename": "admin", "acls": []any{
			acl("publishClientSend", "$CONTROL/dynamic-security/#"),
			acl("publishClientReceive", "$CONTROL/dynamic-security/#"),
			acl("subscribePattern", "$CONTROL/dynamic-security/#"),
			acl("publishClientReceive", "$SYS/#"),
			acl("subscribePattern", "$SYS/#"),
			acl("publishClientReceive", "#"),
			acl("subscribePattern", "#"),
			acl("unsubscribePattern", "#"),
		}}},
		"defaultACLAccess": map[string]any{"publishClientSend": open, "publishClientReceive": true, "subscribe": open, "unsubscribe": true},
	}
	raw, _ := json.Marshal(doc) // maps of strings, numbers and bools always marshal
	return raw
}

// Start starts the broker again after Stop, on the same address, with
// the accounts it had, and waits until it accepts connections.
func (b *Broker) Start() {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cmd != nil {
		return
	}
	cmd := exec.Command(b.bin, "-c", b.conf)
	cmd.Stdout, cmd.Stderr = b.log, b.log
	if err := cmd.Start(); err != nil {
		b.t.Fatalf("start mosquitto: %v", err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	b.cmd, b.done = cmd, done
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", b.Addr)
		if err == nil {
			_ = c.Close()
			return
		}
		select {
		case <-done:
			b.t.Fatalf("mosquitto exited at start:\n%s", b.log.String())
		default:
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("mosquitto did not listen on %s: %v\n%s", b.Addr, err, b.log.String())
		}
		time.Sleep(20 * time.Millisecond) // polling for the listener
	}
}

// Stop stops the broker and waits for it to exit: its clients are
// disconnected and new connections are refused until Start. It asks with
// SIGTERM and kills a broker that has not exited within stopWait: killed
// (SIGKILL) while the dynamic security plugin takes a change, as when a
// test stops it just after svc-cloud's first account changes, mosquitto
// 2.0.11 came back refusing even the admin, in 39 of 40 restarts of a loop
// that killed it at a random instant of a PutCloud; asked with SIGTERM,
// in none (each exit then takes about 3 s).
func (b *Broker) Stop() { b.stop(true) }

// stop stops the broker, killing it at once unless graceful: a broker no
// test starts again is killed.
func (b *Broker) stop(graceful bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cmd == nil {
		return
	}
	if graceful {
		_ = b.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-b.done:
		case <-time.After(stopWait):
		}
	}
	select {
	case <-b.done:
	default:
		_ = b.cmd.Process.Kill()
		<-b.done
	}
	b.cmd, b.done = nil, nil
}

// stopWait is how long Stop waits for the broker to exit on SIGTERM.
const stopWait = 10 * time.Second

// Log returns what the broker has logged so far.
func (b *Broker) Log() string { return b.log.String() }
