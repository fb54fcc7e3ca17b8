package authz

// People decisions: who may deactivate, reactivate, make admin, or reset
// the password of whom. Instance admin matters here and only here (it
// never grants anything about an agent).

// Reasons of people decisions.
const (
	ReasonLastAdmin   = "last-admin"
	ReasonSelf        = "self"
	ReasonDeactivated = "deactivated"
)

// People actions.
const (
	ActDeactivate    = "deactivate"
	ActReactivate    = "reactivate"
	ActGrantAdmin    = "grant-admin"
	ActRevokeAdmin   = "revoke-admin"
	ActResetPassword = "reset-password"
)

// Person is what a people decision knows of an account.
type Person struct {
	Name        string
	Admin       bool
	Deactivated bool
}

// PeopleCheck is one admin action on one account.
type PeopleCheck struct {
	Actor, Target Person
	Action        string // Act*
	// ActiveAdmins counts the admins who are not deactivated, the actor
	// and the target included when they are ones.
	ActiveAdmins int
}

// MayManagePerson decides an admin action on an account: only an active
// admin acts; nobody deactivates themselves (another admin must, so a hub
// is never left with nobody to undo it); the last active admin is never
// deactivated or demoted; a deactivated account is reactivated before it
// is made admin or given a reset code; an admin changes their own password
// themselves rather than issuing themselves a reset code.
func MayManagePerson(c PeopleCheck) Decision {
	if c.Actor.Name == "" || !c.Actor.Admin || c.Actor.Deactivated {
		return deny(ReasonForbidden, "Only a hub admin can manage people; ask one.")
	}
	self := c.Actor.Name == c.Target.Name
	switch c.Action {
	case ActDeactivate:
		if self {
			return deny(ReasonSelf, "You cannot deactivate your own account; another admin can.")
		}
		if c.Target.Admin && !c.Target.Deactivated {
			if d := KeepsAnAdmin(c.ActiveAdmins, true); !d.Allow {
				return d
			}
		}
		return allow
	case ActReactivate:
		return allow
	case ActGrantAdmin:
		if c.Target.Deactivated {
			return deny(ReasonDeactivated, "@%s is deactivated; reactivate the account first.", c.Target.Name)
		}
		return allow
	case ActRevokeAdmin:
		if c.Target.Admin && !c.Target.Deactivated {
			return KeepsAnAdmin(c.ActiveAdmins, true)
		}
		return allow
	case ActResetPassword:
		if self {
			return deny(ReasonSelf, "Change your own password under Account (it asks for the current one) rather than issuing yourself a reset code.")
		}
		if c.Target.Deactivated {
			return deny(ReasonDeactivated, "@%s is deactivated; reactivate the account first.", c.Target.Name)
		}
		return allow
	}
	return deny(ReasonForbidden, "Unknown action on an account.")
}

// KeepsAnAdmin decides whether an active admin may stop being one
// (deactivated or demoted): not the last. The projection asks it too, so
// two admins demoting each other at once on two hub nodes cannot leave
// the hub without one.
func KeepsAnAdmin(activeAdmins int, targetIsActiveAdmin bool) Decision {
	if targetIsActiveAdmin && activeAdmins <= 1 {
		return deny(ReasonLastAdmin, "This is the hub's last admin; make someone else an admin first.")
	}
	return allow
}

// MayEndSession: people end their own sessions (deactivation ends
// everyone's).
func MayEndSession(actor, owner string) Decision {
	if actor != "" && actor == owner {
		return allow
	}
	return deny(ReasonForbidden, "You can only end your own sessions.")
}
