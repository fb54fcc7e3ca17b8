package browser

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
)

// apiToken: alice creates an API token from the user menu; it is shown
// once with a curl line, and works as a bearer token from a script.
func (s *suite) apiToken(t *testing.T) {
	a := s.al
	a.click(t, "#user-menu-button")
	a.click(t, "#open-tokens")
	a.visible(t, "#tokens-dialog")
	a.fill(t, "#token-label", "ci-script")
	a.click(t, "#token-create")
	a.visible(t, "#token-value")
	a.visible(t, "#token-copy")
	token := eval[string](t, a, `document.querySelector('#token-value').textContent`)
	if !strings.HasPrefix(token, "wht_") {
		t.Fatalf("the dialog shows %q, want a wht_ token", token)
	}
	if once := eval[string](t, a, `document.querySelector('#token-once').textContent`); !strings.Contains(once, "shown only once") {
		t.Errorf("the shown-once note reads %q", once)
	}
	curl := eval[string](t, a, `document.querySelector('#token-curl').textContent`)
	if want := fmt.Sprintf(`curl -H "Authorization: Bearer %s" %s/api/v1/me`, token, s.h.URL()); curl != want {
		t.Errorf("the example reads %q, want %q", curl, want)
	}
	if v := eval[string](t, a, `document.querySelector('#token-label').value`); v != "" {
		t.Errorf("the label field still holds %q after creating", v)
	}

	a.shot(t, s.shots, "tokens")

	script := testhub.NewClient(t, s.h.URL())
	script.Token = token
	me := script.Must(200, "GET", "/api/v1/me", nil)
	if u, _ := me.Body["user"].(map[string]any); u["name"] != "alice" {
		t.Errorf("GET /me with the token: %s, want alice", me.Raw)
	}

	// The token is listed (by label, never the secret) and revoking it
	// locks the script out.
	a.visible(t, `#token-list .token-row[data-revoked="false"] .revoke-token`)
	if html := eval[string](t, a, `document.querySelector('#token-list').textContent`); !strings.Contains(html, "ci-script") || strings.Contains(html, token) {
		t.Fatalf("token list %q", html)
	}
	a.click(t, `#token-list .token-row[data-revoked="false"] .revoke-token`)
	a.click(t, "#confirm-ok")
	a.visible(t, `#token-list .token-row[data-revoked="true"]`)
	script.Must(401, "GET", "/api/v1/me", nil)
	a.do(t, "press Esc", chromedp.KeyEvent(kb.Escape))
	a.waitJS(t, "the dialog to close", `!document.querySelector('#tokens-dialog')`)
}

// fullPolicy: the owner edits the whole policy in the agent panel; the
// hub's complaint about a bad duration shows inline, and good values land
// in GET /agents without touching the fields left alone.
func (s *suite) fullPolicy(t *testing.T) {
	a := s.al
	row := `#agent-panel .agent-row[data-handle="alice/demo"]`
	form := row + " .policy-form"
	a.click(t, row+" .policy-details > summary")
	a.visible(t, form+" .policy-max-age")
	for _, sel := range []string{".policy-grace", ".policy-start-on-ended", ".policy-approval-timeout", ".policy-auto-approve", ".policy-auto-approve-note"} {
		a.visible(t, form+" "+sel)
	}
	a.waitJS(t, "the current max age", fmt.Sprintf(`document.querySelector(%s).value === '10m0s'`, js(form+" .policy-max-age")))
	note := eval[string](t, a, fmt.Sprintf(`document.querySelector(%s).textContent`, js(form+" .policy-auto-approve-note")))
	if !strings.Contains(note, "Never applies to turns steered by anyone but you") {
		t.Errorf("the auto-approve note reads %q", note)
	}

	// A duration the hub cannot read: its message, inline.
	a.fill(t, form+" .policy-max-age", "forever")
	a.click(t, form+" .policy-save")
	a.visible(t, form+" .policy-error")
	a.waitJS(t, "the hub's reason", fmt.Sprintf(`document.querySelector(%s).textContent.includes('invalid duration')`, js(form+" .policy-error")))

	// More than the bridge's config allows: the bridge refuses, in words.
	a.fill(t, form+" .policy-max-age", "20m")
	a.click(t, form+" .policy-save")
	a.visible(t, form+" .policy-error")
	a.waitJS(t, "the bridge's reason", fmt.Sprintf(`document.querySelector(%s).textContent.includes('config')`, js(form+" .policy-error")))

	a.fill(t, form+" .policy-max-age", "5m")
	a.fill(t, form+" .policy-approval-timeout", "2m")
	a.click(t, form+" .policy-save")
	a.gone(t, form+" .policy-error")
	a.waitJS(t, "the stored max age", fmt.Sprintf(`document.querySelector(%s).value === '5m0s'`, js(form+" .policy-max-age")))
	a.shot(t, s.shots, "policy")

	var got map[string]any
	for _, ag := range testhub.AsList(s.alice.Must(200, "GET", "/api/v1/agents", nil).Body["agents"]) {
		if ag["handle"] == demo {
			got, _ = ag["policy"].(map[string]any)
		}
	}
	want := map[string]any{"maxAge": "5m0s", "approvalTimeout": "2m0s", "address": "members", "grace": "5s", "startOnEnded": true, "steering": true}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("policy.%s = %v after saving, want %v (policy %v)", k, got[k], v, got)
		}
	}
	a.click(t, row+" .policy-details > summary") // fold it again
}

// bridges: the pairing dialog lists alice's bridges; she revokes a spare
// one and it shows as revoked, while the one running her agent stays.
func (s *suite) bridges(t *testing.T) {
	a := s.al
	spare := s.h.Pair(s.alice, "spare")
	a.click(t, "#user-menu-button")
	a.click(t, "#open-pairing")
	a.visible(t, "#pairing-dialog #bridge-list")
	sel := fmt.Sprintf(`#bridge-list .bridge-row[data-id=%q]`, spare.BridgeID)
	a.visible(t, sel+`[data-revoked="false"] button.revoke-bridge`)
	a.waitJS(t, "two active bridges", `document.querySelectorAll('#bridge-list .bridge-row[data-revoked="false"]').length === 2`)
	if name := eval[string](t, a, fmt.Sprintf(`document.querySelector(%s).textContent`, js(sel+" .bridge-name"))); name != "spare" {
		t.Errorf("the spare bridge is listed as %q", name)
	}

	a.click(t, sel+" button.revoke-bridge")
	a.visible(t, "#confirm-dialog")
	a.click(t, "#confirm-ok")
	a.visible(t, sel+`[data-revoked="true"]`)
	a.waitJS(t, "the revoked status", fmt.Sprintf(`document.querySelector(%s).textContent === 'revoked'`, js(sel+" .bridge-status")))
	if eval[bool](t, a, fmt.Sprintf(`!!document.querySelector(%s)`, js(sel+" button.revoke-bridge"))) {
		t.Error("a revoked bridge still offers Revoke")
	}
	a.waitJS(t, "the other bridge still active", `document.querySelectorAll('#bridge-list .bridge-row[data-revoked="false"]').length === 1`)
	a.shot(t, s.shots, "bridges")

	revoked := false
	for _, b := range testhub.AsList(s.alice.Must(200, "GET", "/api/v1/bridges", nil).Body["bridges"]) {
		if b["id"] == spare.BridgeID {
			revoked = b["revoked"] == true
		}
	}
	if !revoked {
		t.Error("GET /bridges does not show the spare bridge revoked")
	}
	a.do(t, "press Esc", chromedp.KeyEvent(kb.Escape))
	a.waitJS(t, "the dialog to close", `!document.querySelector('#pairing-dialog')`)
	a.waitIdle(t) // the agent's own bridge is untouched
}
