package browser

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/webauthn"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
)

// enroll enrolls p's browser as device name with a code the bridge shows
// (read off its terminal, as the owner does).
func enroll(t *testing.T, p *page, br *testhub.Bridge, name string, passkey bool) {
	t.Helper()
	if eval[bool](t, p, visibleJS("#menu-toggle")) {
		p.click(t, "#menu-toggle") // on a phone the user menu is in the drawer
	}
	p.click(t, "#user-menu-button")
	p.click(t, "#open-devices")
	p.visible(t, "#devices-dialog #enroll-form")
	code := br.EnrollCode(t)
	if !strings.Contains(br.Out(), code) {
		t.Fatalf("the bridge terminal does not show the code %s:\n%s", code, br.Out())
	}
	p.fill(t, "#enroll-name", name)
	p.fill(t, "#enroll-code", strings.ToLower(code)) // typed as it comes: case does not matter
	if passkey {
		p.click(t, "#enroll-passkey")
	}
	p.click(t, "#enroll-submit")
	p.visible(t, `#devices-dialog .this-device-status[data-device^="d"]`)
	p.waitJS(t, "this browser in the device list", fmt.Sprintf(
		`[...document.querySelectorAll('#device-list .device-row[data-revoked="false"]')].some((r) => r.querySelector('.this-device') && r.textContent.includes(%s))`, js(name)))
	p.do(t, "close the dialog", chromedp.KeyEvent(kb.Escape))
	p.gone(t, "#devices-dialog")
}

// enrollBrowser: alice enrolls her laptop's browser with the code her
// bridge shows; a wrong code is refused in words first. The key never
// leaves the browser.
func (s *suite) enrollBrowser(t *testing.T) {
	a := s.al
	a.click(t, "#user-menu-button")
	a.click(t, "#open-devices")
	a.visible(t, `#devices-dialog .this-device-status[data-device=""]`)
	s.br.EnrollCode(t)
	a.fill(t, "#enroll-name", "laptop")
	a.fill(t, "#enroll-code", "AAAAA-AAAAA")
	a.click(t, "#enroll-submit")
	a.visible(t, "#enroll-error")
	a.waitJS(t, "the bridge's reason", `document.querySelector('#enroll-error').textContent.includes('does not match')`)
	a.do(t, "close the dialog", chromedp.KeyEvent(kb.Escape))
	enroll(t, a, s.br, "laptop", false)
	if !strings.Contains(s.br.Out(), `trusted device "laptop"`) {
		t.Fatalf("the bridge did not trust the laptop:\n%s", s.br.Out())
	}
	got := evalAwait[string](t, a, `(async () => {
		const db = await new Promise((ok, no) => { const r = indexedDB.open('wheelhouse-devices', 1); r.onsuccess = () => ok(r.result); r.onerror = () => no(r.error); });
		const rec = await new Promise((ok) => { const r = db.transaction('devices').objectStore('devices').get('alice'); r.onsuccess = () => ok(r.result); });
		try { await crypto.subtle.exportKey('pkcs8', rec.keyPair.privateKey); return 'exported'; } catch (e) { return rec.kind + ':' + rec.keyPair.privateKey.extractable + ':' + e.name; }
	})()`)
	if got != "webcrypto:false:InvalidAccessError" {
		t.Fatalf("the device key: %s (want a non-extractable WebCrypto key)", got)
	}
}

// phoneApproval: alice enrolls her phone (another browser, a phone-sized
// screen) and approves bob's request from it; the card names the phone.
func (s *suite) phoneApproval(t *testing.T) {
	ph := newPage(t, s.browser, "alice-phone")
	defer ph.noErrors(t)
	ph.do(t, "a phone", chromedp.EmulateViewport(390, 844, chromedp.EmulatePortrait, chromedp.EmulateMobile))
	ph.navigate(t, s.h.URL()+"/")
	ph.fill(t, "#login-name", "alice")
	ph.fill(t, "#login-password", password("alice"))
	ph.click(t, "#login-submit")
	ph.visible(t, "#app-screen")
	ph.waitJS(t, "the phone width", `window.innerWidth === 390`)
	enroll(t, ph, s.br, "phone", false)

	s.al.waitIdle(t)
	s.bo.send(t, "@alice/demo delete notes.txt")
	card := `#approval-tray .approval-card[data-agent="alice/demo"][data-status="pending"]`
	ph.waitJS(t, "#dev open", `document.querySelector('#room-title').textContent === '#dev'`)
	ph.visible(t, card+" button.approve")
	ph.shot(t, s.shots, "phone-approval")
	ph.click(t, card+" button.approve")
	decided := `#approval-tray .approval-card[data-agent="alice/demo"][data-status="approved"]`
	ph.visible(t, decided)
	ph.waitJS(t, "approved by alice's phone", fmt.Sprintf(`document.querySelector(%s).textContent.includes('Approved by @alice · phone')`, js(decided)))
	testhub.WaitFor(t, 20*time.Second, "the deletion run", func() bool { return ranTimes(t, s.alice, "dev", "delete_file notes.txt") > 0 })
	if n := ranTimes(t, s.alice, "dev", "delete_file notes.txt"); n != 1 {
		t.Fatalf("the approved call ran %d times", n)
	}
	if !strings.Contains(s.br.Out(), `signed by device "phone"`) {
		t.Fatalf("the bridge did not verify the phone's signature:\n%s", s.br.Out())
	}
	if w := eval[int](t, ph, `document.documentElement.scrollWidth`); w > 390 {
		t.Errorf("the page is %d px wide on a 390 px phone", w)
	}
	ph.do(t, "back to the desktop", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.ClearDeviceMetricsOverride, cdp.Empty{})
		return err
	}))
	s.al.waitIdle(t)
}

// unverified: alice revokes her laptop from the Devices dialog; its next
// approval is refused by the bridge, and the card says the decision could
// not be verified. Nothing runs.
func (s *suite) unverified(t *testing.T) {
	a := s.al
	a.click(t, "#user-menu-button")
	a.click(t, "#open-devices")
	row := `#device-list .device-row[data-revoked="false"]:has(.this-device)`
	a.click(t, row+" button.revoke-device")
	a.click(t, "#confirm-ok")
	a.visible(t, `#devices-dialog .this-device-status[data-device=""]`)
	a.do(t, "close the dialog", chromedp.KeyEvent(kb.Escape))
	if !strings.Contains(s.br.Out(), `revoked device "laptop"`) {
		t.Fatalf("the bridge did not revoke the laptop:\n%s", s.br.Out())
	}
	// The browser forgot its key; put the revoked one back, as a stolen
	// laptop would still have it.
	s.bo.send(t, "@alice/demo delete main.go")
	card := `#approval-tray .approval-card[data-agent="alice/demo"][data-status="pending"]`
	a.visible(t, card+" button.approve")
	a.click(t, card+" button.approve")
	a.visible(t, card+" .enroll-prompt") // not enrolled any more: it asks to enroll first

	// The API client's device is still trusted: revoke it too and approve
	// with it — what a stolen, revoked device would send.
	s.alice.Must(204, "DELETE", "/api/v1/devices/"+s.alice.Device.ID, nil)
	id := eval[string](t, a, fmt.Sprintf(`document.querySelector(%s).dataset.id`, js(card)))
	hash := eval[string](t, a, fmt.Sprintf(`document.querySelector(%s).dataset.hash`, js(card+" .payload-hash")))
	if r := s.alice.Decide(403, id, "approve", hash); r.ErrReason() != "device-revoked" {
		t.Fatalf("%s", r.Raw)
	}
	a.visible(t, card+`[data-unverified="true"] .unverified-flag`)
	a.waitJS(t, "the card says why", fmt.Sprintf(`document.querySelector(%s).textContent.includes('could not be verified')`, js(card+" .unverified-flag")))
	a.shot(t, s.shots, "unverified")
	// Denying needs no device.
	a.click(t, card+" button.deny")
	a.visible(t, `#approval-tray .approval-card[data-agent="alice/demo"][data-status="denied"]`)
	if n := ranTimes(t, s.alice, "dev", "delete_file main.go"); n != 0 {
		t.Fatal("a call ran on a revoked device's approval")
	}
}

// TestPasskeyApproval: alice enrolls a passkey (Chromium's virtual
// authenticator, user verified) on the hub's localhost address and
// approves with it; the bridge verifies the assertion.
func TestPasskeyApproval(t *testing.T) {
	h := testhub.Start(t, testhub.Options{})
	admin := h.Setup("root", "correct horse battery")
	alice := h.AddUser(admin, "alice")
	bob := h.AddUser(admin, "bob")
	alice.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "dev"})
	bob.Must(200, "POST", "/api/v1/rooms/dev/members", nil)
	br := h.StartBridge(alice, nil, bridge.AgentConfig{Name: "demo", Harness: "demo",
		Options: map[string]string{"steps": "1", "step": "50ms"}, PolicyFile: bridge.PolicyConfig{Address: "members"}})
	alice.AddAgent("dev", demo)

	b := startBrowser(t)
	a := newPage(t, b, "alice")
	a.do(t, "a virtual authenticator", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		if _, err := cdp.Call(ctx, tg, webauthn.Enable, webauthn.EnableParams{}); err != nil {
			return err
		}
		_, err := cdp.Call(ctx, tg, webauthn.AddVirtualAuthenticator, webauthn.AddVirtualAuthenticatorParams{Options: &webauthn.VirtualAuthenticatorOptions{
			Protocol: webauthn.AuthenticatorProtocolCtap2, Ctap2version: webauthn.Ctap2versionCtap21, Transport: webauthn.AuthenticatorTransportInternal,
			HasResidentKey: true, HasUserVerification: true, IsUserVerified: true, AutomaticPresenceSimulation: true}})
		return err
	}))
	// A passkey needs a domain name: localhost, not 127.0.0.1.
	url := strings.Replace(h.URL(), "127.0.0.1", "localhost", 1)
	a.navigate(t, url+"/")
	a.fill(t, "#login-name", "alice")
	a.fill(t, "#login-password", password("alice"))
	a.click(t, "#login-submit")
	a.visible(t, "#app-screen")
	enroll(t, a, br, "security key", true)
	if !strings.Contains(br.Out(), "a passkey for localhost") {
		t.Fatalf("the bridge did not enroll a passkey:\n%s", br.Out())
	}

	bob.Post("dev", "@alice/demo delete old.log")
	a.waitJS(t, "#dev open", `document.querySelector('#room-title').textContent === '#dev'`)
	card := `#approval-tray .approval-card[data-agent="alice/demo"][data-status="pending"]`
	a.click(t, card+" button.approve")
	decided := `#approval-tray .approval-card[data-agent="alice/demo"][data-status="approved"]`
	a.visible(t, decided)
	a.waitJS(t, "approved with the passkey", fmt.Sprintf(`document.querySelector(%s).textContent.includes('Approved by @alice · security key')`, js(decided)))
	testhub.WaitFor(t, 20*time.Second, "the deletion run", func() bool { return ranTimes(t, alice, "dev", "delete_file old.log") == 1 })
	if !strings.Contains(br.Out(), `signed by device "security key"`) {
		t.Fatalf("the bridge did not verify the passkey's assertion:\n%s", br.Out())
	}
	a.noErrors(t)
}

// ranTimes counts the demo agent's tool lines for call in room: each run
// of a call reports it once.
func ranTimes(t *testing.T, c *testhub.Client, room, call string) int {
	t.Helper()
	n := 0
	for _, m := range testhub.AsList(c.Must(200, "GET", "/api/v1/rooms/"+room+"/messages?limit=200&include=replies", nil).Body["messages"]) {
		if m["author"] == demo && m["text"] == call {
			n++
		}
	}
	return n
}

// ceilingAndModeration: alice makes #dev ask-only for her agent from the
// agent panel (bob's composer says so), then moderates it: bob's mention
// waits for her, she forwards it from her inbox (signed), and bob's
// receipt goes on, saying who forwarded it. Both set back at the end
// (widening: signed by the laptop).
func (s *suite) ceilingAndModeration(t *testing.T) {
	a, b := s.al, s.bo
	a.click(t, "#tab-agents")
	row := `#agent-panel .agent-row[data-handle="alice/demo"]`
	setSelect := func(p *page, sel, v string) {
		eval[bool](t, p, fmt.Sprintf(`(() => { const s = document.querySelector(%s); s.value = %s; s.dispatchEvent(new Event('change')); return true; })()`, js(sel), js(v)))
	}
	setSelect(a, row+" .ceiling-select", "ask")
	b.visible(t, row+` .agent-ceiling[data-ceiling="ask"] .ceiling-badge`)
	b.compose(t, "@alice/demo look at main.go")
	b.waitJS(t, "the composer hint", `(document.querySelector('#composer-hint .mode-hint[data-agent="alice/demo"] .mode-text')?.textContent || '').includes('in #dev: asks the owner before every command')`)
	b.compose(t, "")
	setSelect(a, row+" .ceiling-select", "normal") // looser: signed
	b.waitJS(t, "the ceiling back to normal", fmt.Sprintf(`!!document.querySelector(%s)`, js(row+` .agent-ceiling[data-ceiling="normal"]`)))
	if !strings.Contains(s.br.Out(), `@alice/demo in dev: normal (by d`) {
		t.Fatalf("the bridge did not take the signed ceiling:\n%s", s.br.Out())
	}

	// Moderate: only alice addresses it directly; others ask her first.
	form := row + " .policy-form"
	eval[bool](t, a, fmt.Sprintf(`(() => { document.querySelector(%s).open = true; return true; })()`, js(row+" .policy-details")))
	a.click(t, form+` .policy-address[value="moderate"]`)
	a.click(t, form+" .policy-save")
	b.waitJS(t, "bob's mode", `document.querySelector('#agent-panel .agent-row[data-handle="alice/demo"] .agent-mode')?.dataset.mode === 'moderated'`)
	// bob's message carries a file: alice sees it on the request, and her
	// forward names it by the hash of the bytes her browser downloads.
	notes := filepath.Join(t.TempDir(), "readme-notes.txt")
	if err := os.WriteFile(notes, []byte("the README is out of date\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b.do(t, "attach readme-notes.txt", chromedp.SetUploadFiles(css("#file-input"), []string{notes}, chromedp.NodeReady))
	b.visible(t, `#attachments .attachment[data-state="ready"][data-name="readme-notes.txt"]`)
	b.send(t, "@alice/demo please summarize README.md")
	msg := messageJS("bob", "please summarize README.md")
	b.waitReceipt(t, msg, demo, "held")
	b.waitJS(t, "waiting for alice", fmt.Sprintf(`(((m) => m && m.querySelector('.receipt[data-agent="alice/demo"] .receipt-text')?.textContent) (%s) || '') === 'waiting for @alice'`, msg))
	a.click(t, "#tab-inbox")
	card := `#inbox-panel .request-card[data-status="held"][data-sender="bob"]`
	a.waitJS(t, "the request", fmt.Sprintf(`(document.querySelector(%s)?.textContent || '').includes('@bob asks @alice/demo')`, js(card)))
	// The file's link opens the bytes this browser downloaded (and signs),
	// not a second download the hub could answer differently.
	fileLink := card + ` .request-files a[download="readme-notes.txt"]`
	a.visible(t, fileLink)
	a.waitJS(t, "the file's link to the downloaded bytes", fmt.Sprintf(`(document.querySelector(%s)?.href || '').startsWith('blob:')`, js(fileLink)))
	a.shot(t, s.shots, "request")
	// The browser signs the hash of the words it shows, not the one the
	// hub sent beside them: a forged one here would be refused by the
	// bridge (wrong-statement) if the browser signed it.
	evalAwait[bool](t, a, `import('/js/store.js').then((m) => { for (const q of m.state.requests.values()) if (q.sender === 'bob') q.textHash = '0'.repeat(64); m.emit('requests'); return true; })`)
	a.click(t, card+" button.forward")
	a.gone(t, card)
	b.waitReceipt(t, msg, demo, "started", "done")
	b.waitJS(t, "forwarded by alice", fmt.Sprintf(`(((m) => m && m.querySelector('.receipt[data-agent="alice/demo"]')?.dataset.forwardedBy) (%s) || '') === 'alice'`, msg))
	a.click(t, "#tab-agents")
	a.click(t, form+` .policy-address[value="members"]`)
	a.click(t, form+" .policy-save") // wider again: signed
	b.waitJS(t, "bob addresses it directly again", `['start', 'steer', 'queue'].includes(document.querySelector('#agent-panel .agent-row[data-handle="alice/demo"] .agent-mode')?.dataset.mode)`)
	eval[bool](t, a, fmt.Sprintf(`(() => { document.querySelector(%s).open = false; return true; })()`, js(row+" .policy-details")))
	a.waitIdle(t)
}
