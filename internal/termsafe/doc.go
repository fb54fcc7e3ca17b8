// Package termsafe owns one rule: text that came from the network or a model
// is made safe before a terminal sees it: control characters (the ESC of
// every escape sequence included), bidi overrides and other invisible
// characters are shown escaped, and overlong lines are cut. It imports only the
// standard library; the CLI and the bridge's live log print through it.
package termsafe
