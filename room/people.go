package room

import (
	"context"
	"strings"
	"time"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/authz"
	"github.com/wheelhouse-dev/wheelhouse/chat"
)

// People management: admins deactivate and reactivate accounts, make and
// unmake admins and issue password reset codes; everyone changes their own
// password and sees and ends their own sessions. Every change is an event;
// the ones that end credentials reach every hub node through the
// projection's feed (see cache.go and the web server's sockets).

func forbidden(d authz.Decision) error {
	return &wh.Error{Code: wh.EForbidden, Reason: d.Reason, Message: d.Message}
}

func person(u *chat.User) authz.Person {
	return authz.Person{Name: u.Name, Admin: u.Admin, Deactivated: u.Deactivated}
}

// managed looks up the target of an admin action and decides it.
func (s *Service) managed(ctx context.Context, actor *chat.User, name, action string) (*chat.User, error) {
	if actor == nil || !actor.Admin {
		return nil, forbidden(authz.MayManagePerson(authz.PeopleCheck{Action: action}))
	}
	target, err := s.UserByName(ctx, normName(name))
	if err != nil {
		return nil, err
	}
	admins, err := s.ActiveAdmins(ctx)
	if err != nil {
		return nil, err
	}
	if d := authz.MayManagePerson(authz.PeopleCheck{Actor: person(actor), Target: person(target), Action: action, ActiveAdmins: admins}); !d.Allow {
		return nil, forbidden(d)
	}
	return target, nil
}

// Deactivate deactivates an account: it can no longer log in; its
// sessions and tokens end (and with them its open sockets, on every node);
// its bridges are revoked, which disconnects them and takes its agents
// offline. Deactivating a deactivated account revokes whatever bridge is
// left (a retry after a crash half-way).
func (s *Service) Deactivate(ctx context.Context, actor *chat.User, name string) (*chat.User, error) {
	target, err := s.managed(ctx, actor, name, authz.ActDeactivate)
	if err != nil {
		return nil, err
	}
	if !target.Deactivated {
		if _, err := s.append(ctx, chat.EvUserDeactivated, chat.UserChange{User: target.Name, By: actor.Name}); err != nil && wh.ErrorCode(err) != wh.EConflict {
			return nil, err
		}
	}
	// Through the bridges' own revocation: the hub nodes disconnect a
	// revoked bridge and its agents go offline.
	ids, err := s.PairedBridgeIDs(ctx, target.ID)
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		ev, err := chat.NewEventWithID("bridge-revoked."+id, chat.EvBridgeRevoked, s.now(), chat.BridgeRevoked{ID: id, By: actor.Name})
		if err != nil {
			return nil, wh.Wrap(err, "encode revocation")
		}
		if _, err := s.Log.Append(ctx, ev); err != nil && wh.ErrorCode(err) != wh.ENotFound {
			return nil, err
		}
	}
	return s.UserByName(ctx, target.Name)
}

// Reactivate lets a deactivated account log in again. Its old sessions,
// tokens and bridges stay ended: its owner logs in, and pairs their
// machines, anew.
func (s *Service) Reactivate(ctx context.Context, actor *chat.User, name string) (*chat.User, error) {
	target, err := s.managed(ctx, actor, name, authz.ActReactivate)
	if err != nil {
		return nil, err
	}
	if target.Deactivated {
		if _, err := s.append(ctx, chat.EvUserReactivated, chat.UserChange{User: target.Name, By: actor.Name}); err != nil && wh.ErrorCode(err) != wh.EConflict {
			return nil, err
		}
	}
	return s.UserByName(ctx, target.Name)
}

// SetAdmin grants or revokes hub admin. The last active admin stays one.
func (s *Service) SetAdmin(ctx context.Context, actor *chat.User, name string, admin bool) (*chat.User, error) {
	action := authz.ActRevokeAdmin
	if admin {
		action = authz.ActGrantAdmin
	}
	target, err := s.managed(ctx, actor, name, action)
	if err != nil {
		return nil, err
	}
	if target.Admin != admin {
		if _, err := s.append(ctx, chat.EvUserAdmin, chat.UserAdmin{User: target.Name, Admin: admin, By: actor.Name}); err != nil {
			return nil, err
		}
	}
	return s.UserByName(ctx, target.Name)
}

// IssuePasswordReset returns a one-time code for name's password (an admin
// hands it over). It works once, until it expires, and replaces any code
// issued before.
func (s *Service) IssuePasswordReset(ctx context.Context, actor *chat.User, name string) (string, time.Time, error) {
	target, err := s.managed(ctx, actor, name, authz.ActResetPassword)
	if err != nil {
		return "", time.Time{}, err
	}
	code := NewSecret("whr_")
	exp := s.now().Add(chat.PasswordResetTTL).UTC()
	if _, err := s.append(ctx, chat.EvPasswordResetIssued, chat.PasswordResetIssued{User: target.Name, CodeHash: HashSecret(code), ExpiresAt: exp, By: actor.Name}); err != nil {
		return "", time.Time{}, err
	}
	return code, exp, nil
}

// RedeemPasswordReset sets a new password with a reset code. Every session
// and token of the account ends; the caller gets a new session.
func (s *Service) RedeemPasswordReset(ctx context.Context, code, password string, from Client) (string, *chat.User, error) {
	if !strings.HasPrefix(code, "whr_") || len(code) > 100 {
		return "", nil, wh.Errorf(wh.EInvalid, "a reset code starts with whr_: copy the whole code (or link) the admin gave you")
	}
	if err := validatePassword(password); err != nil {
		return "", nil, err
	}
	hash := HashSecret(code)
	pr, err := s.PasswordResetByHash(ctx, hash)
	if err != nil {
		return "", nil, err
	}
	if pr.Used {
		return "", nil, wh.Errorf(wh.EForbidden, "this reset code was already used or replaced: ask an admin for a new one")
	}
	if s.now().After(pr.Expires) {
		return "", nil, wh.Errorf(wh.EForbidden, "this reset code has expired: ask an admin for a new one")
	}
	pw, err := HashPassword(password)
	if err != nil {
		return "", nil, wh.Wrap(err, "hash password")
	}
	if _, err := s.append(ctx, chat.EvPasswordChanged, chat.PasswordChanged{User: pr.User, PasswordHash: pw, Reset: hash}); err != nil {
		return "", nil, err
	}
	secret, err := s.newSession(ctx, pr.User, from)
	if err != nil {
		return "", nil, err
	}
	u, err := s.UserByName(ctx, pr.User)
	return secret, u, err
}

// ChangePassword changes actor's own password; the current one is
// required (and its checks are throttled like logins). Every other session
// ends; keep (the hash of the credential making the change) stays.
func (s *Service) ChangePassword(ctx context.Context, actor *chat.User, keep, current, password string, from Client) error {
	if err := validatePassword(password); err != nil {
		return err
	}
	if current == password {
		return wh.Errorf(wh.EInvalid, "the new password is the same as the current one")
	}
	if _, err := s.checkPassword(ctx, actor.Name, current, from); err != nil {
		if wh.ErrorCode(err) == wh.EUnauthenticated {
			// Not 401: the session is fine, the password is not.
			return wh.Errorf(wh.EForbidden, "the current password is wrong")
		}
		return err
	}
	pw, err := HashPassword(password)
	if err != nil {
		return wh.Wrap(err, "hash password")
	}
	_, err = s.append(ctx, chat.EvPasswordChanged, chat.PasswordChanged{User: actor.Name, PasswordHash: pw, Keep: keep})
	return err
}

// Sessions lists actor's live sessions; current (a credential hash) marks
// the one asking.
func (s *Service) Sessions(ctx context.Context, actor *chat.User, current string) ([]chat.Session, error) {
	ss, err := s.ActiveSessions(ctx, actor.ID, s.now())
	if err != nil {
		return nil, err
	}
	for i := range ss {
		ss[i].Current = len(current) >= 16 && ss[i].ID == current[:16]
	}
	return ss, nil
}

// EndSession ends one of actor's sessions by its id.
func (s *Service) EndSession(ctx context.Context, actor *chat.User, id string) error {
	if len(id) != 16 || strings.Trim(id, "0123456789abcdef") != "" {
		return wh.Errorf(wh.EInvalid, "session ids are 16 hex characters (see GET /api/v1/sessions)")
	}
	hash, err := s.SessionHash(ctx, actor.ID, id)
	if err != nil {
		return err
	}
	_, err = s.append(ctx, chat.EvCredentialRevoked, chat.CredentialRevoked{TokenHash: hash, Reason: chat.EndRevoked})
	return err
}
