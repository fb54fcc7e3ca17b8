package e2e_test

import (
	"strconv"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func wireList() wire.InvitationsRequest { return wire.InvitationsRequest{} }

func wireAccept(id int64) wire.InvitationsRequest {
	return wire.InvitationsRequest{Decide: "accept", ID: id}
}

func bridgePolicyMembers() bridge.PolicyConfig { return bridge.PolicyConfig{Address: "members"} }
