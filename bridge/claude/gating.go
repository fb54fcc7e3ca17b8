package claude

import (
	"fmt"
	"strings"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
)

// Both Claude harnesses answer the bridge's gating question (bridge.Gating)
// the same way. Claude Code consults a PreToolUse hook before every tool
// call — the launched harness's own callback over stdio, the attached
// session's hook binary — and that hook sends every tool with side effects
// to the owner once the session is tainted. Input that is not the owner's
// own typed words (Input.Strict, or another sender) taints the session
// before it can reach the model. So any turn is strict from the moment
// such input enters it, and stays so for the life of the session.

// ownerTurnsText says what an untainted session does without asking.
const ownerTurnsText = "let Claude Code run what its allow rules permit without asking (the agent's allowed_tools, your own Claude Code settings, its built-in read-only commands) until someone else's words reach the session, after which every tool call with side effects asks you"

// taints reports whether in marks the session: anything but the owner's
// own typed words.
func taints(in bridge.Input) bool { return in.Strict || !in.SenderIsOwner }

// StrictTurns implements bridge.Gating: a launched session can always send
// every side effect to the gate (its PreToolUse hook is registered over
// stdio when the process starts).
func (l *Launched) StrictTurns() error { return nil }

// TurnStrict implements bridge.Gating: strict input written into the
// running turn taints the session first, so every later tool call of the
// turn asks the owner.
func (l *Launched) TurnStrict(turnID string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return turnID != "" && turnID == l.turn
}

// OwnerTurns implements bridge.Gating.
func (l *Launched) OwnerTurns() string { return ownerTurnsText }

// StrictTurns implements bridge.Gating: an attached session sends every
// side effect to the owner once tainted only if the Wheelhouse hook is
// wired for every event in the project (the hook records the taint before
// it delivers a note, and gates at PreToolUse).
func (a *Attached) StrictTurns() error {
	rep := DoctorWith(DoctorOptions{Project: a.proj.Dir, StateDir: a.proj.StateRoot})
	if !rep.Wired {
		missing := "every event"
		if len(rep.MissingEvents) > 0 && len(rep.MissingEvents) < len(hookEvents) {
			missing = strings.Join(rep.MissingEvents, ", ")
		}
		return fmt.Errorf("the Wheelhouse hook is not wired in the owner's Claude Code project for %s, so it cannot stop a tool call", missing)
	}
	return nil
}

// TurnStrict implements bridge.Gating: the hook taints the session before
// it hands it a note that is not the owner's own words, so every later tool
// call asks the owner.
func (a *Attached) TurnStrict(turnID string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return turnID != "" && turnID == a.turn
}

// OwnerTurns implements bridge.Gating.
func (a *Attached) OwnerTurns() string { return ownerTurnsText }

var (
	_ bridge.Gating = (*Launched)(nil)
	_ bridge.Gating = (*Attached)(nil)
)
