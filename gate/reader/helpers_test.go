package reader_test

import (
	"errors"
	"strings"
	"time"
)

func errorsAs(err error, target any) bool { return errors.As(err, target) }

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// pollPause is the pause between two polls of a condition that has a deadline.
func pollPause() { time.Sleep(time.Millisecond) }
