// Package web serves the hub's HTTP JSON API, the live-events WebSocket and
// the embedded browser UI. It imports room, authz and wire; nothing imports
// web but the hub wiring.
package web
