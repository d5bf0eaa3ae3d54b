package update

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Environment the supervisor gives the daemon it starts.
const (
	// EnvSlots is the slots directory, for the daemon's Updater.
	EnvSlots = "SVC_EDGE_SLOTS"
	// EnvSlot is the slot the daemon runs from ("a" or "b").
	EnvSlot = "SVC_EDGE_SLOT"
	// EnvTrialFD is set on a trial start: the file descriptor on which
	// the daemon writes its health check's result (ReportHealth).
	EnvTrialFD = "SVC_EDGE_TRIAL_FD"
)

// Defaults of Supervisor.
const (
	// DefaultTrialTimeout bounds a trial start, from the process's start
	// to its health check's result: the cache opens in seconds, and the
	// broker is given a minute to connect.
	DefaultTrialTimeout = 3 * time.Minute
	// DefaultStopGrace is how long a daemon has to stop after SIGTERM
	// before SIGKILL: its shutdown waits 5 s for scans in flight.
	DefaultStopGrace = 15 * time.Second
	// maxBackoff bounds the wait before a daemon that exited is started
	// again.
	maxBackoff = 30 * time.Second
	// tailBytes is how much of a trial's last output is kept for a
	// rollback's reason: a Go panic's stack is a few KB.
	tailBytes = 16 << 10
)

// Supervised is what a Supervisor needs of its slots: Dir and Partitions.
type Supervised interface {
	Slots
	Results
	// Path is what the daemon is told (EnvSlots) to open the slots with.
	Path() string
}

// Supervisor runs the current slot's daemon, and a requested trial, on
// Slots.
type Supervisor struct {
	// Slots are the slots.
	Slots Supervised
	// Exe, when set, is the daemon's program whatever the slot: on
	// Partitions, the running root's svc-edge (a slot's Path is its
	// partition). Empty: the slot's Path (Dir).
	Exe string
	// Reboot restarts the system, for slots whose trial is a boot
	// (LaunchReboot, LaunchRunning); it is not called otherwise.
	Reboot func() error
	// Args are the daemon's arguments ("run", "--config", ...).
	Args []string
	// Env is the daemon's environment besides the supervisor's own.
	Env []string
	// Stdout and Stderr receive the daemon's output; nil: the
	// supervisor's own.
	Stdout, Stderr io.Writer
	// TrialTimeout, StopGrace: zero means the defaults.
	TrialTimeout, StopGrace time.Duration
	// Logger receives the supervisor's log; nil means slog.Default().
	Logger *slog.Logger
	// Now is the clock of results; nil means time.Now.
	Now func() time.Time
}

func (s *Supervisor) defaults() {
	if s.TrialTimeout == 0 {
		s.TrialTimeout = DefaultTrialTimeout
	}
	if s.StopGrace == 0 {
		s.StopGrace = DefaultStopGrace
	}
	if s.Logger == nil {
		s.Logger = slog.Default()
	}
	if s.Now == nil {
		s.Now = time.Now
	}
	if s.Stdout == nil {
		s.Stdout = os.Stdout
	}
	if s.Stderr == nil {
		s.Stderr = os.Stderr
	}
}

// Run supervises until ctx ends, then stops the daemon (SIGTERM, SIGKILL
// after StopGrace) and returns nil. It returns an error only when the
// slots cannot be read or written.
func (s *Supervisor) Run(ctx context.Context) error {
	s.defaults()
	if err := s.recover(ctx); err != nil {
		return err
	}
	backoff := time.Second
	for ctx.Err() == nil {
		t, ok, err := s.Slots.Trial(ctx)
		if err != nil {
			return err
		}
		var ran time.Duration
		if ok {
			launch, lerr := s.Slots.Launch(ctx, t)
			if lerr != nil {
				return lerr
			}
			switch launch {
			case LaunchReboot:
				if _, err := s.Slots.BeginTrial(ctx, s.Now()); err != nil {
					return err
				}
				s.Logger.Info("trial requested; restarting the system into it", "slot", t.Slot.Name, "version", t.Slot.Version)
				return s.reboot(ctx)
			case LaunchRunning:
				if _, err := s.trial(ctx); err != nil || ctx.Err() != nil {
					return err
				}
				if cur, err := s.Slots.Current(ctx); err != nil {
					return err
				} else if cur.Name != t.Slot.Name { // rolled back
					return s.reboot(ctx)
				}
				continue // committed: the release runs on as the current one
			}
			ran, err = s.trial(ctx)
		} else {
			ran, err = s.runCurrent(ctx)
		}
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
		if _, pending, err := s.Slots.Trial(ctx); err == nil && (ok || pending) {
			// A trial ended (the release runs on, or the previous one
			// starts again), or the daemon asked for one: start now.
			backoff = time.Second
			continue
		}
		// A daemon that exited on its own: start it again, at once after a
		// long run, with a growing pause after short ones, as systemd's
		// Restart= would.
		if ran > time.Minute {
			backoff = time.Second
		}
		s.Logger.Warn("daemon exited; starting it again", "after", backoff.String())
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
	return nil
}

// reboot restarts the system and waits for the end.
func (s *Supervisor) reboot(ctx context.Context) error {
	if s.Reboot == nil {
		return errors.New("update: the slots start a trial by a reboot, and the supervisor has no Reboot")
	}
	if err := s.Reboot(); err != nil {
		return fmt.Errorf("update: reboot: %w", err)
	}
	<-ctx.Done()
	return nil
}

// recover finishes what a supervisor stopped mid-trial left: a trial that
// was started and whose slot is current was committed (only the trial
// file's removal was lost); one started and not current was cut short, a
// failure (on Partitions: the trial's boot did not commit). The trial's
// own boot (LaunchRunning) is left to Run.
func (s *Supervisor) recover(ctx context.Context) error {
	t, ok, err := s.Slots.Trial(ctx)
	if err != nil || !ok || !t.Started {
		return err
	}
	launch, err := s.Slots.Launch(ctx, t)
	if err != nil || launch == LaunchRunning {
		return err
	}
	cur, err := s.Slots.Current(ctx)
	if err != nil {
		return err
	}
	if cur.Name == t.Slot.Name {
		if err := s.Slots.Commit(ctx); err != nil {
			return err
		}
		return s.result(t, Committed, "")
	}
	if launch == LaunchReboot {
		return s.rollback(ctx, t, fmt.Sprintf("the appliance restarted during the trial: slot %s's boot did not come up "+
			"(a kernel panic, a hang until the watchdog, a crash or a power cut), and the boot loader started slot %s again", t.Slot.Name, cur.Name))
	}
	return s.rollback(ctx, t, "the appliance restarted during the trial (a crash, a power cut or a stop)")
}

// runCurrent runs the current slot's daemon until it exits or ctx ends.
func (s *Supervisor) runCurrent(ctx context.Context) (time.Duration, error) {
	cur, err := s.Slots.Current(ctx)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	p, err := s.start(cur, nil)
	if err != nil {
		s.Logger.Error("daemon did not start", "slot", cur.Name, "error", err.Error())
		return 0, nil
	}
	s.Logger.Info("daemon started", "slot", cur.Name, "version", cur.Version, "pid", p.cmd.Process.Pid)
	select {
	case <-ctx.Done():
		s.stop(p)
	case <-p.exited:
		s.Logger.Warn("daemon exited", "slot", cur.Name, "status", p.status())
	}
	return time.Since(start), nil
}

// trial begins the pending trial (Slots.BeginTrial), starts its slot once
// and commits it when its health check passes, or rolls back.
func (s *Supervisor) trial(ctx context.Context) (time.Duration, error) {
	t, err := s.Slots.BeginTrial(ctx, s.Now())
	if err != nil {
		return 0, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return 0, s.rollback(ctx, t, "no pipe for the health check: "+err.Error())
	}
	start := time.Now()
	p, err := s.start(t.Slot, w)
	_ = w.Close() // the child holds its copy
	if err != nil {
		_ = r.Close()
		return 0, s.rollback(ctx, t, "the new release did not start: "+err.Error())
	}
	s.Logger.Info("trial started", "slot", t.Slot.Name, "version", t.Slot.Version, "from", t.From, "pid", p.cmd.Process.Pid)
	health := make(chan string, 1)
	go func() {
		defer r.Close()
		line, _ := bufio.NewReader(io.LimitReader(r, 4096)).ReadString('\n')
		health <- strings.TrimSpace(line)
	}()
	timer := time.NewTimer(s.TrialTimeout)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			// The trial stays started: the next start rolls it back.
			s.stop(p)
			return time.Since(start), nil
		case line := <-health:
			if line == "" { // the pipe closed without a word: wait for the exit
				health = nil
				continue
			}
			if line != HealthOK {
				s.stop(p)
				return time.Since(start), s.rollback(ctx, t, "the health check failed: "+strings.TrimPrefix(line, healthFailPrefix))
			}
			if err := s.Slots.Commit(ctx); err != nil {
				s.stop(p)
				return time.Since(start), err
			}
			if err := s.result(t, Committed, ""); err != nil {
				s.Logger.Error("update committed; its result not recorded", "error", err.Error())
			}
			s.Logger.Info("update committed", "slot", t.Slot.Name, "version", t.Slot.Version)
			select {
			case <-ctx.Done():
				s.stop(p)
			case <-p.exited:
				s.Logger.Warn("daemon exited", "slot", t.Slot.Name, "status", p.status())
			}
			return time.Since(start), nil
		case <-p.exited:
			reason := fmt.Sprintf("the new release exited (%s) before its health check passed", p.status())
			if tail := p.tail(); tail != "" {
				reason += "; its last output: " + tail
			}
			return time.Since(start), s.rollback(ctx, t, reason)
		case <-timer.C:
			s.stop(p)
			return time.Since(start), s.rollback(ctx, t, fmt.Sprintf("no health check result within %s", s.TrialTimeout))
		}
	}
}

func (s *Supervisor) rollback(ctx context.Context, t Trial, reason string) error {
	if err := s.Slots.Rollback(ctx); err != nil {
		return err
	}
	s.Logger.Error("update rolled back", "version", t.Slot.Version, "to", t.From, "reason", reason)
	return s.result(t, RolledBack, reason)
}

func (s *Supervisor) result(t Trial, outcome, reason string) error {
	return s.Slots.SetResult(Result{Version: t.Slot.Version, From: t.From, SHA256: t.SHA256, Outcome: outcome, Reason: reason, At: s.Now().UTC()})
}

// process is a started daemon.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed once Wait returned
	out    *tailWriter
}

func (p *process) status() string {
	<-p.exited
	if st := p.cmd.ProcessState; st != nil {
		return st.String()
	}
	return "unknown"
}

func (p *process) tail() string { return p.out.String() }

// start runs slot's executable; health, when set, is its fd 3.
func (s *Supervisor) start(slot Slot, health *os.File) (*process, error) {
	exe := slot.Path
	if s.Exe != "" {
		exe = s.Exe
	}
	cmd := exec.Command(exe, s.Args...)
	cmd.Env = append(append(os.Environ(), s.Env...), EnvSlots+"="+s.Slots.Path(), EnvSlot+"="+slot.Name)
	out := &tailWriter{max: tailBytes}
	cmd.Stdout = s.Stdout
	cmd.Stderr = io.MultiWriter(s.Stderr, out)
	if health != nil {
		cmd.ExtraFiles = []*os.File{health}
		cmd.Env = append(cmd.Env, EnvTrialFD+"=3")
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &process{cmd: cmd, exited: make(chan struct{}), out: out}
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// stop ends p: SIGTERM, and SIGKILL after StopGrace.
func (s *Supervisor) stop(p *process) {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(s.StopGrace):
		s.Logger.Warn("daemon did not stop; killing it", "pid", p.cmd.Process.Pid)
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// tailWriter keeps the last max bytes written to it.
type tailWriter struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

// String is what says why a process ended: a Go runtime's "panic:" or
// "fatal error:" line, else the last line or two written, on one line.
func (t *tailWriter) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(string(t.b)), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(lines[i], "panic: ") || strings.HasPrefix(lines[i], "fatal error: ") {
			return lines[i]
		}
	}
	if len(lines) > 2 {
		lines = lines[len(lines)-2:]
	}
	return strings.Join(lines, " | ")
}

// Health check results on the trial's pipe.
const (
	// HealthOK is a passed health check.
	HealthOK         = "ok"
	healthFailPrefix = "fail: "
)

// ReportHealth writes a trial's health check result to the supervisor
// when the daemon runs on trial (EnvTrialFD set), and does nothing
// otherwise. check is nil for a pass.
func ReportHealth(check error) error {
	fd := os.Getenv(EnvTrialFD)
	if fd == "" {
		return nil
	}
	if fd != "3" {
		return fmt.Errorf("update: %s=%q: the supervisor passes 3", EnvTrialFD, fd)
	}
	f := os.NewFile(3, "health")
	if f == nil {
		return errors.New("update: no health check pipe on fd 3")
	}
	defer f.Close()
	line := HealthOK
	if check != nil {
		line = healthFailPrefix + strings.ReplaceAll(check.Error(), "\n", " ")
	}
	_, err := io.WriteString(f, line+"\n")
	return err
}

// OnTrial reports whether this process is a trial start.
func OnTrial() bool { return os.Getenv(EnvTrialFD) != "" }
