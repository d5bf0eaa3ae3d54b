// Package logging builds the log/slog logger svc-cloud and svc-edge log
// with, from the flags both take: --log-format (text or json) and
// --log-level (debug, info, warn or error), which default to the
// SVC_LOG_FORMAT and SVC_LOG_LEVEL variables, then to text and info.
//
// It imports the standard library only.
package logging

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
)

// Formats a Config's Format may name.
const (
	// FormatText is slog's key=value lines, for a person reading a
	// terminal or the journal.
	FormatText = "text"
	// FormatJSON is one JSON object a line, for a log pipeline (Loki,
	// Elasticsearch, a cloud's log service) that parses fields.
	FormatJSON = "json"
)

// Config is how a program logs.
type Config struct {
	Format string // FormatText or FormatJSON
	Level  string // debug, info, warn or error
}

// Register adds --log-format and --log-level to fs, their defaults read
// from SVC_LOG_FORMAT and SVC_LOG_LEVEL.
func (c *Config) Register(fs *flag.FlagSet) {
	fs.StringVar(&c.Format, "log-format", envOr("SVC_LOG_FORMAT", FormatText), "text (key=value) or json (one object a line) (env SVC_LOG_FORMAT)")
	fs.StringVar(&c.Level, "log-level", envOr("SVC_LOG_LEVEL", "info"), "debug, info, warn or error (env SVC_LOG_LEVEL)")
}

func envOr(name, def string) string {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		return v
	}
	return def
}

// Validate names the flag that holds a value it does not know.
func (c Config) Validate() error {
	if _, err := c.level(); err != nil {
		return err
	}
	if c.Format != FormatText && c.Format != FormatJSON {
		return fmt.Errorf("--log-format %q: want text or json", c.Format)
	}
	return nil
}

func (c Config) level() (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(c.Level)); err != nil {
		return l, fmt.Errorf("--log-level %q: want debug, info, warn or error", c.Level)
	}
	return l, nil
}

// New returns the logger writing to w. A Config that does not validate
// logs text at info: callers validate it first, and report what is wrong.
func (c Config) New(w io.Writer) *slog.Logger {
	l, err := c.level()
	if err != nil {
		l = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: l}
	if c.Format == FormatJSON {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
