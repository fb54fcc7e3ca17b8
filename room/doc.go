// Package room owns the chat domain's rules: who may create, join, post,
// add agents, pair bridges, decide — each decision made with authz — and
// the events those changes append to the log. It reads through store and
// appends through eventlog; it never imports web, hub or bridge.
package room
