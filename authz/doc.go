// Package authz owns Wheelhouse's pure decisions: who may address, steer,
// stop, approve and manage; when a turn is tainted; canonical JSON and the
// payload hash an approval is bound to; the audit hash chain; and the
// envelope that tells the model who is speaking.
//
// It does no I/O (apart from crypto/rand in NewNonce) and imports nothing of
// ours — not even wire — so hub and bridge can both call it and every rule
// can be table-tested in isolation. Its reason strings equal wire's Reason*
// constants on purpose.
//
// Names (users, owners, agents) are compared exactly: callers pass the
// normalized (lower-case) names room stores. Admin status never appears in a
// decision about an agent: only the owner speaks for their agents.
package authz
