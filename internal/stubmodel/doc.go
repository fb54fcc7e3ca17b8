// Package stubmodel serves fake model APIs that speak the real wire formats
// (OpenAI Responses over SSE for Codex, Anthropic Messages over SSE for
// Claude Code), scripted per test, recording every request body. It is the
// only fake in the test suite: it stands in for a model we cannot run here.
package stubmodel
