package hub_test

import (
	"testing"

	"github.com/wheelhouse-dev/wheelhouse/authz"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// authz and wire import nothing of ours, so each spells the reasons and
// address policies itself; receipts carry authz's words on the wire.
func TestAuthzAndWireAgree(t *testing.T) {
	for _, p := range [][2]string{
		{authz.ReasonNotAMember, wire.ReasonNotAMember},
		{authz.ReasonNotAllowed, wire.ReasonNotAllowed},
		{authz.ReasonAgentNotInRoom, wire.ReasonAgentNotInRoom},
		{authz.ReasonSteeringDisabled, wire.ReasonSteeringDisabled},
		{authz.ReasonSteerLimit, wire.ReasonSteerLimit},
		{authz.ReasonExpired, wire.ReasonExpired},
		{authz.ReasonPeerAgent, wire.ReasonPeerAgent},
		{authz.ReasonStaleTurn, wire.ReasonStaleTurn},
		{authz.ReasonTurnEnded, wire.ReasonTurnEnded},
		{authz.AddressOwner, wire.AddressOwner},
		{authz.AddressUsers, wire.AddressUsers},
		{authz.AddressMembers, wire.AddressMembers},
		{authz.StatePending, wire.ApprovalPending},
		{authz.StateApproved, wire.ApprovalApproved},
		{authz.StateDenied, wire.ApprovalDenied},
		{authz.StateExpired, wire.ApprovalExpired},
		{authz.StateVoided, wire.ApprovalVoided},
	} {
		if p[0] != p[1] {
			t.Errorf("authz says %q, wire says %q", p[0], p[1])
		}
	}
}
