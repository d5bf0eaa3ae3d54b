package printer

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/svc-vms/svc/shared/durable"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/svc-vms/svc/kiosk/badge"
)

// State is where a print job stands.
type State string

// The states of a job. A job goes queued → printing → printed or failed;
// Retry takes a failed job back through printing.
const (
	JobQueued   State = "queued"
	JobPrinting State = "printing"
	JobPrinted  State = "printed"
	JobFailed   State = "failed"
)

// Limits of the queue: a badge PNG is about 6 KB.
const (
	// MaxJobBytes is the largest PNG a job may carry.
	MaxJobBytes = 1 << 20
	// MaxQueueBytes is the most PNG bytes the queue holds in all.
	MaxQueueBytes = 32 << 20
	// DefaultMaxAge is how long a job is kept after its last change.
	DefaultMaxAge = 7 * 24 * time.Hour
	maxIDLen      = 128
)

// Errors of the queue.
var (
	// ErrInvalidJob is returned by Submit for a job with a bad ID, no
	// printer address, an unknown label or an empty or oversized PNG.
	ErrInvalidJob = errors.New("invalid print job")
	// ErrQueueFull is returned by Submit when the job would take the
	// queue past its MaxBytes.
	ErrQueueFull = errors.New("print queue full")
	// ErrUnknownJob is returned by Retry for an ID the queue does not
	// hold.
	ErrUnknownJob = errors.New("no such print job")
	// ErrAlreadyPrinted is returned by Retry, with the job, when the job
	// printed: it is not sent again.
	ErrAlreadyPrinted = errors.New("print job already printed; not sent again")
	// ErrBusy is returned by Retry while the job is being sent.
	ErrBusy = errors.New("print job is being sent")
)

// Job is a badge to print on a printer, and how that went.
type Job struct {
	// ID is the caller's: submitting an ID again is the same job.
	ID string `json:"id"`
	// Addr is the printer, host:port.
	Addr string `json:"addr"`
	// Label is the badge.Label's Name.
	Label string `json:"label"`
	State State  `json:"state"`
	// Reason and Error say why the last attempt failed; empty otherwise.
	// Reason is for the kiosk to put in words, Error for the log.
	Reason   Reason    `json:"reason,omitempty"`
	Error    string    `json:"error,omitempty"`
	Attempts int       `json:"attempts"`
	Created  time.Time `json:"created"`
	Updated  time.Time `json:"updated"`
	// PNG is the badge. List leaves it out; Get and Submit fill it.
	PNG []byte `json:"png,omitempty"`
}

// jobFile is a job on disk.
type jobFile struct {
	V int `json:"v"`
	Job
}

// PrintFunc sends a PNG to a printer: Client.PrintPNG.
type PrintFunc func(ctx context.Context, addr string, png []byte, label badge.Label) error

// QueueOptions configure a Queue; zero fields take defaults.
type QueueOptions struct {
	// Print sends a job; nil means (&Client{}).PrintPNG.
	Print PrintFunc
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// MaxAge is how long a job is kept after its last change; 0 means
	// DefaultMaxAge.
	MaxAge time.Duration
	// MaxBytes is the most PNG bytes held in all; 0 means MaxQueueBytes.
	MaxBytes int
	Log      *slog.Logger
}

// Queue keeps print jobs in a directory, one file per job, until they are
// older than MaxAge, so a badge waits on the appliance until a printer took
// it and a restart loses none.
//
// A job is written as "printing" (and synced) before its first byte is
// sent, and is never sent again once "printed". A job found "printing" when
// the queue opens was being sent when the appliance stopped; it may or may
// not have printed, so it becomes failed with Reason MayHavePrinted and
// waits for a person to look at the printer and Retry it: the queue never
// resends on its own.
type Queue struct {
	dir    string
	print  PrintFunc
	now    func() time.Time
	maxAge time.Duration
	limit  int
	log    *slog.Logger

	mu       sync.Mutex
	jobs     map[string]*Job
	sending  map[string]bool
	size     int
	skipped  []string
	printers map[string]*sync.Mutex // one job at a time to a printer
}

// OpenQueue opens or creates the queue in dir. Files it cannot read as a
// job are logged, renamed to NAME.corrupt and listed by Skipped; they never
// stop the queue from opening.
func OpenQueue(dir string, opt QueueOptions) (*Queue, error) {
	q := &Queue{
		dir: dir, print: opt.Print, now: opt.Now, maxAge: opt.MaxAge, log: opt.Log,
		jobs: map[string]*Job{}, sending: map[string]bool{}, printers: map[string]*sync.Mutex{},
	}
	if q.print == nil {
		q.print = (&Client{}).PrintPNG
	}
	if q.now == nil {
		q.now = time.Now
	}
	q.limit = opt.MaxBytes
	if q.limit <= 0 {
		q.limit = MaxQueueBytes
	}
	if q.maxAge <= 0 {
		q.maxAge = DefaultMaxAge
	}
	if q.log == nil {
		q.log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("open print queue: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("open print queue: %w", err)
	}
	for _, e := range entries {
		name := e.Name()
		path := filepath.Join(dir, name)
		switch {
		case strings.Contains(name, ".json.new-"):
			// A write the appliance did not finish; the job's previous
			// file, if any, is whole.
			_ = os.Remove(path)
			continue
		case !strings.HasSuffix(name, ".json") || !e.Type().IsRegular():
			continue
		}
		j, err := readJob(path, strings.TrimSuffix(name, ".json"))
		if err != nil {
			q.log.Warn("print queue: skipped a job file it cannot read", "file", path, "err", err)
			q.skipped = append(q.skipped, name)
			if err := os.Rename(path, path+".corrupt"); err != nil {
				q.log.Warn("print queue: could not set the file aside", "file", path, "err", err)
			}
			continue
		}
		if j.State == JobPrinting {
			j.State, j.Reason = JobFailed, MayHavePrinted
			j.Error = "the appliance stopped while sending this job: it may have printed; check the printer before retrying"
			j.Updated = q.now()
			if err := q.write(j); err != nil {
				return nil, fmt.Errorf("open print queue: %w", err)
			}
		}
		q.jobs[j.ID] = j
		q.size += len(j.PNG)
	}
	q.mu.Lock()
	q.prune()
	q.mu.Unlock()
	return q, nil
}

func readJob(path, id string) (*Job, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// Base64 and JSON make a job file at most a little over 4/3 of its PNG.
	data, err := io.ReadAll(io.LimitReader(f, MaxJobBytes*3/2+4096))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxJobBytes*3/2 {
		return nil, errors.New("larger than any job")
	}
	var jf jobFile
	if err := json.Unmarshal(data, &jf); err != nil {
		return nil, err
	}
	j := jf.Job
	switch {
	case jf.V != 1:
		return nil, fmt.Errorf("version %d, want 1", jf.V)
	case j.ID != id:
		return nil, fmt.Errorf("holds job %q", j.ID)
	case j.State != JobQueued && j.State != JobPrinting && j.State != JobPrinted && j.State != JobFailed:
		return nil, fmt.Errorf("state %q", j.State)
	}
	if err := validJob(j.ID, j.Addr, j.Label, j.PNG); err != nil {
		return nil, err
	}
	return &j, nil
}

func validJob(id, addr, label string, png []byte) error {
	if id == "" || len(id) > maxIDLen || strings.TrimLeft(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != "" {
		return fmt.Errorf("%w: ID %q: want 1 to %d letters, digits, _ or -", ErrInvalidJob, id, maxIDLen)
	}
	if addr == "" {
		return fmt.Errorf("%w: no printer address", ErrInvalidJob)
	}
	if _, ok := badge.LabelByName(label); !ok {
		return fmt.Errorf("%w: unknown label %q", ErrInvalidJob, label)
	}
	if len(png) == 0 || len(png) > MaxJobBytes {
		return fmt.Errorf("%w: PNG of %d bytes, want 1 to %d", ErrInvalidJob, len(png), MaxJobBytes)
	}
	return nil
}

// write stores a job durably: a temporary file, synced, renamed over the
// job's file, then the directory synced.
func (q *Queue) write(j *Job) error {
	data, err := json.Marshal(jobFile{V: 1, Job: *j})
	if err != nil {
		return fmt.Errorf("encode print job: %w", err)
	}
	return writeFile(filepath.Join(q.dir, j.ID+".json"), data)
}

// Submit stores a job and sends it at once, returning the job as it ended:
// printed, or failed with its Reason. Submitting an ID the queue holds
// sends nothing and returns that job as it is. The error is for the queue
// itself (ErrInvalidJob, ErrQueueFull, a disk error), not for the printer.
// It takes as long as the printer does: up to the Client's timeout.
func (q *Queue) Submit(ctx context.Context, id, addr string, label badge.Label, png []byte) (Job, error) {
	if err := validJob(id, addr, label.Name, png); err != nil {
		return Job{}, err
	}
	q.mu.Lock()
	if j, ok := q.jobs[id]; ok {
		defer q.mu.Unlock()
		return q.copy(j, true), nil
	}
	q.prune()
	if q.size+len(png) > q.limit {
		q.mu.Unlock()
		return Job{}, fmt.Errorf("%w: %d bytes held", ErrQueueFull, q.size)
	}
	now := q.now()
	j := &Job{ID: id, Addr: addr, Label: label.Name, State: JobQueued, Created: now, Updated: now, PNG: append([]byte(nil), png...)}
	if err := q.write(j); err != nil {
		q.mu.Unlock()
		return Job{}, fmt.Errorf("submit print job: %w", err)
	}
	q.jobs[id] = j
	q.size += len(png)
	q.mu.Unlock()
	return q.send(ctx, id)
}

// Retry sends a queued or failed job again and returns it as it ended. A
// printed job is not sent: Retry returns it with ErrAlreadyPrinted. It
// returns ErrUnknownJob and ErrBusy.
func (q *Queue) Retry(ctx context.Context, id string) (Job, error) {
	return q.send(ctx, id)
}

func (q *Queue) send(ctx context.Context, id string) (Job, error) {
	q.mu.Lock()
	j, ok := q.jobs[id]
	switch {
	case !ok:
		q.mu.Unlock()
		return Job{}, fmt.Errorf("%w: %q", ErrUnknownJob, id)
	case j.State == JobPrinted:
		defer q.mu.Unlock()
		return q.copy(j, true), ErrAlreadyPrinted
	case q.sending[id] || j.State == JobPrinting:
		defer q.mu.Unlock()
		return q.copy(j, true), ErrBusy
	}
	// "printing" is on disk before the first byte leaves, so a crash
	// mid-send is seen on the next open (see Queue).
	prev := *j
	j.State, j.Reason, j.Error = JobPrinting, "", ""
	j.Attempts++
	j.Updated = q.now()
	if err := q.write(j); err != nil {
		*j = prev
		q.mu.Unlock()
		return Job{}, fmt.Errorf("send print job: %w", err)
	}
	q.sending[id] = true
	pm := q.printers[j.Addr]
	if pm == nil {
		pm = &sync.Mutex{}
		q.printers[j.Addr] = pm
	}
	addr, png := j.Addr, j.PNG
	label, _ := badge.LabelByName(j.Label)
	q.mu.Unlock()

	pm.Lock()
	perr := q.print(ctx, addr, png, label)
	pm.Unlock()

	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.sending, id)
	if perr == nil {
		j.State = JobPrinted
	} else {
		j.State, j.Reason, j.Error = JobFailed, ReasonOf(perr), perr.Error()
		q.log.Info("print queue: print failed", "job", id, "printer", addr, "reason", string(j.Reason), "err", perr)
	}
	j.Updated = q.now()
	if err := q.write(j); err != nil {
		// The job's file still says "printing": after a restart it is
		// "may have printed", which is true.
		return q.copy(j, true), fmt.Errorf("record print job: %w", err)
	}
	return q.copy(j, true), nil
}

// Get returns a job with its PNG.
func (q *Queue) Get(id string) (Job, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	j, ok := q.jobs[id]
	if !ok {
		return Job{}, false
	}
	return q.copy(j, true), true
}

// List returns the jobs, newest first, without their PNGs.
func (q *Queue) List() []Job {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make([]Job, 0, len(q.jobs))
	for _, j := range q.jobs {
		out = append(out, q.copy(j, false))
	}
	slices.SortFunc(out, func(a, b Job) int {
		return cmp.Or(b.Created.Compare(a.Created), strings.Compare(a.ID, b.ID))
	})
	return out
}

// Skipped names the job files OpenQueue could not read and set aside.
func (q *Queue) Skipped() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]string(nil), q.skipped...)
}

// Prune removes the jobs last changed more than MaxAge ago, except one
// being sent, and returns how many. Submit prunes too.
func (q *Queue) Prune() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.prune()
}

func (q *Queue) prune() int {
	cut := q.now().Add(-q.maxAge)
	n := 0
	for id, j := range q.jobs {
		if q.sending[id] || !j.Updated.Before(cut) {
			continue
		}
		if err := os.Remove(filepath.Join(q.dir, id+".json")); err != nil && !errors.Is(err, os.ErrNotExist) {
			q.log.Warn("print queue: could not remove an old job", "job", id, "err", err)
			continue
		}
		delete(q.jobs, id)
		q.size -= len(j.PNG)
		n++
	}
	return n
}

func (q *Queue) copy(j *Job, withPNG bool) Job {
	c := *j
	c.PNG = nil
	if withPNG {
		c.PNG = append([]byte(nil), j.PNG...)
	}
	return c
}

// writeFile replaces path with data durably (shared/durable): a crash
// leaves the old file or the new one, and at worst a temporary file that
// the next OpenQueue removes.
func writeFile(path string, data []byte) error {
	return durable.WriteFile(path, 0o600, func(w io.Writer) error { _, err := w.Write(data); return err })
}
