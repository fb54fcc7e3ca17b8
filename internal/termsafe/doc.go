// Package termsafe owns one rule: text that came from the network or a model
// is made safe before a terminal sees it (no control characters, escape
// sequences, bidi overrides or overlong lines). It imports only the
// standard library; the CLI and the bridge's live log print through it.
package termsafe
