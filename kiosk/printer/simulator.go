package printer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/png"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"

	"github.com/svc-vms/svc/kiosk/badge"
)

// Fault is a way a Simulator misbehaves, for tests and demonstrations.
type Fault int

// The faults a Simulator can show.
const (
	// FaultNone: the printer works.
	FaultNone Fault = iota
	// FaultNoMedia: out of labels; status replies say "no media".
	FaultNoMedia
	// FaultCoverOpen: status replies say "cover open".
	FaultCoverOpen
	// FaultDrop: the printer closes the connection when a page has
	// arrived, without printing it or saying anything.
	FaultDrop
	// FaultSilent: the printer accepts connections and reads, but never
	// answers.
	FaultSilent
)

// Media is what a Simulator has loaded.
type Media struct {
	Continuous        bool
	WidthMM, LengthMM int
}

// MediaOf is the media a label is printed on.
func MediaOf(l badge.Label) Media {
	return Media{Continuous: l.Continuous, WidthMM: l.WidthMM, LengthMM: l.LengthMM}
}

// Printed is a label a Simulator printed.
type Printed struct {
	Label badge.Label
	Image *image.Paletted
	// Path is the PNG written for it, or "" when the Simulator keeps
	// labels in memory only.
	Path string
}

// Simulator is a Brother QL printer on a TCP port: it answers status
// requests, decodes each job with the strict decoder, keeps the pages it
// printed and writes each as a PNG into a directory for a person to open.
// A job it cannot decode ends the connection, as a printer would reset.
type Simulator struct {
	ln  net.Listener
	dir string
	log *slog.Logger

	mu      sync.Mutex
	media   Media
	fault   Fault
	printed []Printed
	conns   map[net.Conn]struct{}
	closed  bool
	seq     int // number of the last label file written
}

// ListenSimulator listens on addr ("127.0.0.1:0" picks a free port) with a
// 62 mm continuous roll loaded. dir, if not "", is created and receives a
// label-NNNN.png for each label printed. log may be nil.
func ListenSimulator(addr, dir string, log *slog.Logger) (*Simulator, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("simulated printer: %w", err)
		}
	}
	seq := 0
	if dir != "" {
		// Number on from labels an earlier run left, so none is
		// overwritten.
		old, _ := filepath.Glob(filepath.Join(dir, "label-*.png"))
		seq = len(old)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("simulated printer: %w", err)
	}
	return &Simulator{ln: ln, dir: dir, log: log, media: MediaOf(badge.Continuous62), conns: map[net.Conn]struct{}{}, seq: seq}, nil
}

// Addr is the address the Simulator listens on.
func (s *Simulator) Addr() string { return s.ln.Addr().String() }

// SetFault makes the printer misbehave from its next status reply or page.
func (s *Simulator) SetFault(f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fault = f
}

// Load changes the labels loaded.
func (s *Simulator) Load(m Media) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.media = m
}

// Printed returns the labels printed so far, oldest first.
func (s *Simulator) Printed() []Printed {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Printed(nil), s.printed...)
}

// Run serves connections until ctx ends, then closes the listener and every
// connection and returns once their goroutines have ended. It returns nil
// after ctx ends, or the listener's error.
func (s *Simulator) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	stop := context.AfterFunc(ctx, func() {
		s.mu.Lock()
		s.closed = true
		for c := range s.conns {
			_ = c.Close()
		}
		s.mu.Unlock()
		_ = s.ln.Close()
	})
	defer stop()
	defer wg.Wait()
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("simulated printer: %w", err)
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			_ = conn.Close()
			continue
		}
		s.conns[conn] = struct{}{}
		s.mu.Unlock()
		wg.Go(func() {
			defer func() {
				s.mu.Lock()
				delete(s.conns, conn)
				s.mu.Unlock()
				_ = conn.Close()
			}()
			if err := s.serve(conn); err != nil {
				s.log.Warn("simulated printer: connection ended", "remote", conn.RemoteAddr().String(), "err", err)
			}
		})
	}
}

func (s *Simulator) status() (Status, Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Status{Type: StatusReply, MediaWidth: s.media.WidthMM, MediaType: mediaContinuous}
	if !s.media.Continuous {
		st.MediaType, st.MediaLength = mediaDieCut, s.media.LengthMM
	}
	switch s.fault {
	case FaultNoMedia:
		st.Err1, st.MediaType, st.MediaWidth, st.MediaLength = Err1NoMedia, 0, 0, 0
	case FaultCoverOpen:
		st.Err2 = Err2CoverOpen
	}
	return st, s.fault
}

// serve speaks to one client until it hangs up, sends what the decoder
// refuses, or the Simulator drops it.
func (s *Simulator) serve(conn net.Conn) error {
	p := newParser(conn)
	for {
		ev, page, err := p.next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		st, fault := s.status()
		if fault == FaultSilent {
			continue
		}
		if ev == evStatusRequest {
			if st.Err1 != 0 || st.Err2 != 0 {
				st.Type = StatusError
			}
			if _, err := conn.Write(st.Bytes()); err != nil {
				return err
			}
			continue
		}
		if fault == FaultDrop {
			return errors.New("dropped as told (FaultDrop)")
		}
		if st.Err1 == 0 && st.Err2 == 0 && MediaOf(page.Label) != (Media{Continuous: st.Continuous(), WidthMM: st.MediaWidth, LengthMM: st.MediaLength}) {
			st.Err2 = Err2ReplaceMedia
		}
		if st.Err1 != 0 || st.Err2 != 0 {
			st.Type = StatusError
			if _, err := conn.Write(st.Bytes()); err != nil {
				return err
			}
			continue
		}
		if err := s.keep(page); err != nil {
			return err
		}
		var reply []byte
		for _, step := range []struct{ typ, phase byte }{{StatusPhase, PhasePrinting}, {StatusCompleted, PhasePrinting}, {StatusPhase, PhaseReceiving}} {
			st.Type, st.Phase = step.typ, step.phase
			reply = append(reply, st.Bytes()...)
		}
		if _, err := conn.Write(reply); err != nil {
			return err
		}
	}
}

// keep records a printed page and writes its PNG, atomically, so a person
// opening the directory never sees half a label.
func (s *Simulator) keep(page Page) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	pr := Printed{Label: page.Label, Image: page.Image}
	if s.dir != "" {
		var buf bytes.Buffer
		if err := png.Encode(&buf, page.Image); err != nil {
			return fmt.Errorf("encode printed label: %w", err)
		}
		pr.Path = filepath.Join(s.dir, fmt.Sprintf("label-%04d.png", s.seq+1))
		if err := writeFile(pr.Path, buf.Bytes()); err != nil {
			return err
		}
		s.seq++
		s.log.Info("simulated printer: printed", "label", page.Label.Name, "file", pr.Path)
	}
	s.printed = append(s.printed, pr)
	return nil
}
