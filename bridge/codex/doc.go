// Package codex drives OpenAI's codex CLI as a bridge harness: one
// persistent `codex app-server` process and thread per agent, spoken to with
// JSON-RPC over stdio (turn/start, turn/steer with expectedTurnId,
// turn/interrupt), its approval requests routed through the bridge's Gate.
// It answers the bridge's Gating question: strict turns (untrusted, no
// sandbox to leave, confirmed by codex) for words that are not the owner's,
// the sandbox bound into every approval, and codex's own rules checked.
// It imports bridge and the root error type only; never web, room or hub code.
package codex
