package cloud

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// This file keeps edges' accounts at an external broker that holds its
// own (Mosquitto's dynamic security plugin) in step with the edges the
// cloud has (docs/decisions.md, "Edge accounts on Mosquitto"). The
// embedded broker needs none of it: it asks the cloud (AuthenticateEdge)
// and drops revoked edges itself.
//
// An edge's broker password is never stored, so its account is made where
// the password is known, before the edge is committed: CreateEdge,
// ClaimEnrolment (with a password nobody knows, which proves the broker
// can be reached) and PollEnrolment (the password the appliance
// receives). Everything else follows from the database:
// ReconcileBrokerAccounts disables the accounts of revoked edges and
// deletes those of edges that do not exist.

// BrokerAccounts are the edges' accounts at an external broker. Every
// method is idempotent, so any number of cloud processes may call them at
// once. Errors wrap ErrBrokerUnavailable when the broker could not be
// reached or did not answer.
type BrokerAccounts interface {
	// PutEdge gives edge e an account with password (its username its
	// ID, its rights its own topics alone: docs/decisions.md), or the
	// password to the account it has, which stays disabled if it is. A
	// new account records made (BrokerAccount.MadeAt).
	PutEdge(ctx context.Context, e Edge, password string, made time.Time) error
	// EdgeAccounts returns every account whose username is an edge ID.
	EdgeAccounts(ctx context.Context) ([]BrokerAccount, error)
	// DisableEdge refuses the edge's account and disconnects it at once;
	// an account disabled already, or none, is nil.
	DisableEdge(ctx context.Context, edgeID string) error
	// DeleteEdge deletes the edge's account, disconnecting it; none is
	// nil.
	DeleteEdge(ctx context.Context, edgeID string) error
}

// BrokerAccount is an edge's account at an external broker.
type BrokerAccount struct {
	EdgeID   string
	Disabled bool
	// MadeAt is when PutEdge made it; zero when the broker does not say
	// (an account made by hand).
	MadeAt time.Time
}

// BrokerOrphanGrace is how old an account of no edge must be before
// ReconcileBrokerAccounts deletes it: the account is made before its edge
// is committed, and the commit may be under way. A commit takes well
// under a second; the margin covers clocks that differ between cloud
// processes.
const BrokerOrphanGrace = 10 * time.Minute

// SetBrokerAccounts makes the service keep edges' accounts at an external
// broker (nil: none, the default, right for the embedded broker). Call it
// before the service is used.
func (s *Service) SetBrokerAccounts(a BrokerAccounts) { s.accounts = a }

// BrokerAccountsWake returns a channel that holds a token once an edge
// was revoked through this service: the reconcile loop waits on it
// between rounds, so a revoked edge is cut off at once.
func (s *Service) BrokerAccountsWake() <-chan struct{} { return s.accountsWake }

// putBrokerAccount gives e an account with password at the external
// broker, if the service keeps them. Errors wrap ErrBrokerUnavailable when
// the broker could not be reached: the caller then commits nothing.
func (s *Service) putBrokerAccount(ctx context.Context, e Edge, password string) error {
	if s.accounts == nil {
		return nil
	}
	if err := s.accounts.PutEdge(ctx, e, password, s.Now()); err != nil {
		return fmt.Errorf("broker account of edge %s: %w", e.ID, err)
	}
	return nil
}

// revokedBrokerAccount wakes the reconcile loop after an edge was revoked.
func (s *Service) revokedBrokerAccount() {
	if s.accounts == nil {
		return
	}
	select {
	case s.accountsWake <- struct{}{}:
	default:
	}
}

// BrokerReconciled is what one ReconcileBrokerAccounts did.
type BrokerReconciled struct {
	Disabled []string // revoked edges whose accounts it disabled
	Deleted  []string // accounts of no edge that it deleted
}

// ReconcileBrokerAccounts brings the external broker's edge accounts in
// line with the edges in the store: it disables the account of each
// revoked edge that is not disabled, and deletes each account whose
// edge does not exist once it is older than grace (BrokerOrphanGrace when
// 0; an account whose age is unknown counts as old). The accounts of edges
// that may connect are left alone, even when disabled by hand. An account
// that fails does not stop the others: their errors are joined. Without
// BrokerAccounts it does nothing.
func (s *Service) ReconcileBrokerAccounts(ctx context.Context, grace time.Duration) (BrokerReconciled, error) {
	var out BrokerReconciled
	if s.accounts == nil {
		return out, nil
	}
	if grace <= 0 {
		grace = BrokerOrphanGrace
	}
	accounts, err := s.accounts.EdgeAccounts(ctx)
	if err != nil {
		return out, fmt.Errorf("reconcile broker accounts: %w", err)
	}
	names := make([]string, len(accounts))
	for i, a := range accounts {
		names[i] = a.EdgeID
	}
	revoked, err := s.store.EdgesRevoked(ctx, names)
	if err != nil {
		return out, fmt.Errorf("reconcile broker accounts: %w", err)
	}
	now := s.Now()
	var errs []error
	for _, a := range accounts {
		r, exists := revoked[a.EdgeID]
		switch {
		case exists && r && !a.Disabled:
			if err := s.accounts.DisableEdge(ctx, a.EdgeID); err != nil {
				errs = append(errs, fmt.Errorf("disable broker account of revoked edge %s: %w", a.EdgeID, err))
				continue
			}
			out.Disabled = append(out.Disabled, a.EdgeID)
		case !exists && now.Sub(a.MadeAt) >= grace:
			if err := s.accounts.DeleteEdge(ctx, a.EdgeID); err != nil {
				errs = append(errs, fmt.Errorf("delete broker account of no edge %s: %w", a.EdgeID, err))
				continue
			}
			out.Deleted = append(out.Deleted, a.EdgeID)
		}
	}
	return out, errors.Join(errs...)
}
