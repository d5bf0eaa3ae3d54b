package release

// What an appliance reports of its updates to the cloud (edge/update
// sends them; the cloud checks them and shows them in the fleet).

// Outcomes of an update.
const (
	// Committed: the release passed its trial and runs.
	Committed = "committed"
	// RolledBack: the release failed its trial (its health check, an exit,
	// a timeout, a restart during it); the previous release runs again.
	RolledBack = "rolled_back"
	// Rejected: the release failed before anything changed (its signature,
	// architecture, size or hash); it never ran.
	Rejected = "rejected"
)

// ValidOutcome reports whether s is one of the outcomes.
func ValidOutcome(s string) bool { return s == Committed || s == RolledBack || s == Rejected }

// States of an appliance's update in progress.
const (
	StateIdle           = "idle"
	StateDownloading    = "downloading"
	StateVerifying      = "verifying"
	StateTrialRequested = "trial_requested"
)

// ValidState reports whether s is one of the states.
func ValidState(s string) bool {
	return s == StateIdle || s == StateDownloading || s == StateVerifying || s == StateTrialRequested
}
