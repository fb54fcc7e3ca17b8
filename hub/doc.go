// Package hub wires one hub node: the embedded (or external) NATS server and
// its bridge authentication, the room service with its log and projection,
// the bridge link, and the web server. It is what `wheelhouse hub` and
// `wheelhouse up` run; tests start the very same type.
package hub
