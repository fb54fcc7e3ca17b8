package authz

import (
	"slices"
	"time"
)

// Limits is the part of an agent's policy that says how much it lets
// others do: who may address it directly, whether and how often a running
// turn may be steered, what a steer for an ended turn may start, how long
// queued messages live, which tools run without asking. (The approval
// timeout is not a limit: it only says how long the owner has to decide.)
type Limits struct {
	Address      string
	Allowed      []string
	Steering     bool
	MaxSteers    int // 0: no limit
	Grace        time.Duration
	StartOnEnded bool
	MaxAge       time.Duration
	AutoApprove  []string
}

// Beyond lists what p allows that limit does not, by field name (the
// policy's JSON names); empty when p stays within limit. A change that only
// narrows needs nobody's signature; one that goes beyond what the bridge
// holds needs the owner's device; and nothing goes beyond the bridge's own
// config.
func Beyond(limit, p Limits) []string {
	var out []string
	if !directWithin(direct(p), direct(limit)) {
		out = append(out, "address")
	}
	if p.Steering && !limit.Steering {
		out = append(out, "steering")
	}
	if unlimitedMore(p.MaxSteers, limit.MaxSteers) {
		out = append(out, "maxSteers")
	}
	if p.StartOnEnded && !limit.StartOnEnded {
		out = append(out, "startOnEnded")
	}
	if unlimitedMore(int64(p.Grace), int64(limit.Grace)) {
		out = append(out, "grace")
	}
	if p.MaxAge > limit.MaxAge {
		out = append(out, "maxAge")
	}
	for _, t := range p.AutoApprove {
		if !slices.Contains(limit.AutoApprove, t) {
			out = append(out, "autoApprove")
			break
		}
	}
	return out
}

// unlimitedMore: p allows more than limit, where 0 means no limit.
func unlimitedMore[T int | int64](p, limit T) bool {
	switch {
	case limit == 0:
		return false
	case p == 0:
		return true
	}
	return p > limit
}

// directSet is who may address an agent directly besides its owner: all
// members, or these names.
type directSet struct {
	all   bool
	names []string
}

// direct is who p lets address the agent directly: moderation adds nobody
// (a held message reaches the agent only through the owner's signed
// forward), an unknown address nobody.
func direct(p Limits) directSet {
	switch p.Address {
	case AddressMembers:
		return directSet{all: true}
	case AddressUsers, AddressModerate:
		return directSet{names: p.Allowed}
	}
	return directSet{}
}

func directWithin(p, limit directSet) bool {
	if limit.all {
		return true
	}
	if p.all {
		return false
	}
	for _, n := range p.names {
		if !slices.Contains(limit.names, n) {
			return false
		}
	}
	return true
}

// Room capability ceilings: per agent and room, what a turn started from
// (or steered by a message from) that room may do.
const (
	// CeilingReadOnly: no side effects. Every write or command that
	// reaches the gate is denied without asking, and the harness runs the
	// turn read-only where it can.
	CeilingReadOnly = "read-only"
	// CeilingAsk: every side effect goes to the owner; nothing is
	// auto-approved.
	CeilingAsk = "ask"
	// CeilingNormal: the owner's policy as it is.
	CeilingNormal = "normal"
)

// ValidCeiling reports whether c is one of the three ceilings.
func ValidCeiling(c string) bool {
	return c == CeilingReadOnly || c == CeilingAsk || c == CeilingNormal
}

// ceilingRank orders ceilings from strictest (0); an unknown one is the
// strictest.
func ceilingRank(c string) int {
	switch c {
	case CeilingNormal:
		return 2
	case CeilingAsk:
		return 1
	}
	return 0
}

// CeilingWidens reports whether moving from cur to next lets turns do more.
func CeilingWidens(cur, next string) bool { return ceilingRank(next) > ceilingRank(cur) }

// StricterCeiling returns the stricter of a and b (read-only for an
// unknown one).
func StricterCeiling(a, b string) string {
	if ceilingRank(b) < ceilingRank(a) {
		a = b
	}
	if ceilingRank(a) == 0 {
		return CeilingReadOnly // an unknown ceiling is the strictest
	}
	return a
}

// CeilingNeedsStrict: a turn under c must send every side effect to the
// gate (read-only and ask do).
func CeilingNeedsStrict(c string) bool { return ceilingRank(c) < 2 }

// CeilingAutoApproves: a turn under c may auto-approve (normal only).
func CeilingAutoApproves(c string) bool { return ceilingRank(c) == 2 }

// CeilingDeniesAll: a turn under c runs nothing that reaches the gate.
func CeilingDeniesAll(c string) bool { return ceilingRank(c) == 0 }

// UnverifiedDMCeiling is the ceiling of words that claim to come from the
// owner's own DM with the agent but are not verified as the owner's: the
// owner's DM grant (normal) is only for the owner's words, and a hub could
// have relabelled a message from any of the agent's rooms as coming from
// there. So they get the strictest ceiling of the agent's rooms, and at
// most ask.
func UnverifiedDMCeiling(rooms []string) string {
	c := CeilingAsk
	for _, r := range rooms {
		c = StricterCeiling(c, r) // an unknown one is the strictest
	}
	return c
}
