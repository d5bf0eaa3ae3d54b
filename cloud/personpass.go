package cloud

import (
	"context"
	"fmt"
	"time"

	"github.com/svc-vms/svc/shared/passtoken"
)

// Personal passes (docs/decisions.md, "Personal passes and punches at
// gates"): every active person has one pass, the token passtoken.SignPerson
// makes of their ID and Person.PassIssuedAt. The token is not stored: it
// depends only on the signing key and the claims, so it is signed again
// whenever it is shown and is the same each time. The site edges follow
// every person (EdgePerson) and refuse a token whose issue time is not the
// person's current one, or of a person deactivated.

// PersonPass returns the token of the person's current personal pass and
// its issue time, signed with the tenant's current pass-signing key (made
// on first use). ErrNotFound when the tenant has no such person; a
// *StateError when the person is deactivated, whose pass does not work.
func (s *Service) PersonPass(ctx context.Context, t Tenant, personID string) (token string, issuedAt time.Time, err error) {
	p, err := s.store.Person(ctx, t, personID)
	if err != nil {
		return "", time.Time{}, err
	}
	if !p.Active {
		return "", time.Time{}, &StateError{Object: "person", State: "inactive", Action: "show the pass of"}
	}
	k, err := s.signingKey(ctx, t)
	if err != nil {
		return "", time.Time{}, err
	}
	return signPersonPass(k, p)
}

// ReissuePersonPass gives the person a new personal pass and returns its
// token and issue time: PassIssuedAt becomes now, cut to the second, or a
// second past the current one when now is not after it (two reissues in
// one second, or a clock behind another process's), so an issue time never
// comes back and no earlier token can work again. The old token is
// refused at a site's gates once its edge has the change. The person's
// event is person.updated. ErrNotFound when the tenant has no such person;
// a *StateError when the person is deactivated.
func (s *Service) ReissuePersonPass(ctx context.Context, t Tenant, personID string) (token string, issuedAt time.Time, err error) {
	// The key first: making the tenant's first key is a write of its own,
	// which must not wait inside the person's transaction.
	k, err := s.signingKey(ctx, t)
	if err != nil {
		return "", time.Time{}, err
	}
	p, err := s.store.UpdatePerson(ctx, t, personID, func(p *Person) error {
		if !p.Active {
			return &StateError{Object: "person", State: "inactive", Action: "reissue the pass of"}
		}
		now := s.Now()
		issued := now.Truncate(time.Second)
		if !issued.After(p.PassIssuedAt) {
			issued = p.PassIssuedAt.Truncate(time.Second).Add(time.Second)
		}
		p.PassIssuedAt, p.UpdatedAt = issued, now
		if replyOf(ctx) == nil {
			return nil
		}
		tok, at, err := signPersonPass(k, *p)
		if err != nil {
			return err
		}
		return respond(ctx, PersonPass{PersonID: p.ID, Token: tok, IssuedAt: at})
	})
	if err != nil {
		return "", time.Time{}, err
	}
	return signPersonPass(k, p)
}

// PersonPass is a person's pass as ReissuePersonPass makes it.
type PersonPass struct {
	PersonID string
	Token    string
	IssuedAt time.Time
}

func signPersonPass(k passtoken.Key, p Person) (string, time.Time, error) {
	issued := p.PassIssuedAt.UTC().Truncate(time.Second)
	tok, err := passtoken.SignPerson(k, passtoken.PersonClaims{PersonID: p.ID, IssuedAt: issued})
	if err != nil {
		return "", time.Time{}, fmt.Errorf("sign personal pass of %s: %w", p.ID, err)
	}
	return tok, issued, nil
}
