package cloud

import "context"

// Failpoints are the named instants of a write request at which a test
// stops the process, to show that a crash at any of them leaves either
// nothing done or the action and its stored response both durable
// (cloud/httpapi's crash test). Failpoint is nil outside that test, and
// Fail then costs a nil check.
const (
	FailBeforeAction = "before-action" // the key looked up; nothing written
	FailBeforeCommit = "before-commit" // a write's statements and its record sent; COMMIT not
	FailAfterCommit  = "after-commit"  // a write committed; nothing answered
	FailResponded    = "responded"     // the response sent to the client
)

// Failpoint, when set (by a test's child process, before it serves), is
// called at each failpoint with the context of the request or write.
var Failpoint func(ctx context.Context, name string)

// Fail calls Failpoint, when set, at the failpoint name.
func Fail(ctx context.Context, name string) {
	if Failpoint != nil {
		Failpoint(ctx, name)
	}
}
