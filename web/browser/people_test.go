package browser

import (
	"fmt"
	"strings"
	"testing"

	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
)

// loginUI logs name in through the login form.
func loginUI(t *testing.T, p *page, base, name, pw string) {
	t.Helper()
	p.navigate(t, base+"/")
	p.visible(t, "#login-name")
	p.fill(t, "#login-name", name)
	p.fill(t, "#login-password", pw)
	p.click(t, "#login-submit")
	p.visible(t, "#app-screen")
	p.waitJS(t, "signed in as "+name, fmt.Sprintf(`document.querySelector('#me-name').textContent === %s`, js(name)))
}

func personJS(name string) string { return fmt.Sprintf(`#people-list .person-row[data-name=%q]`, name) }

// The admin's People screen and everyone's Account screen: deactivating
// someone sends their open page back to the login screen at once, saying
// why; a reset link sets a new password; a user changes their own password
// and sees and ends their sessions.
func TestPeopleUI(t *testing.T) {
	shots := screenshots(t)
	h := testhub.Start(t, testhub.Options{})
	admin := h.Setup("root", rootPassword)
	h.AddUser(admin, "alice")
	h.AddUser(admin, "bob")
	b := startBrowser(t)
	root, al, bo := newPage(t, b, "root"), newPage(t, b, "alice"), newPage(t, b, "bob")
	pages := []*page{root, al, bo}
	step := func(name string, f func(t *testing.T)) {
		t.Helper()
		if !t.Run(name, func(t *testing.T) {
			f(t)
			for _, p := range pages {
				p.noErrors(t)
			}
		}) {
			t.FailNow()
		}
	}

	step("AdminOpensPeople", func(t *testing.T) {
		loginUI(t, root, h.URL(), "root", rootPassword)
		loginUI(t, bo, h.URL(), "bob", password("bob"))
		root.click(t, "#user-menu-button")
		root.click(t, "#open-admin")
		root.visible(t, "#people-dialog")
		for _, n := range []string{"root", "alice", "bob"} {
			root.visible(t, personJS(n)+`[data-deactivated="false"]`)
		}
		// The last admin stays one: the hub's reason shows.
		root.click(t, personJS("root")+" .toggle-admin")
		root.visible(t, "#people-error")
		root.waitJS(t, "the last-admin reason", `document.querySelector('#people-error').textContent.includes('last admin')`)
		if eval[bool](t, root, fmt.Sprintf(`!!document.querySelector(%s)`, js(personJS("root")+" .deactivate"))) {
			t.Error("the admin is offered to deactivate themselves")
		}
	})

	step("DeactivateEndsTheirPageAtOnce", func(t *testing.T) {
		root.click(t, personJS("bob")+" .deactivate")
		root.click(t, "#confirm-ok")
		root.visible(t, personJS("bob")+`[data-deactivated="true"] .reactivate`)
		// bob's open page learns it from its socket, without a reload.
		bo.visible(t, "#login-form")
		bo.waitJS(t, "the reason on bob's login screen", `document.querySelector('#login-form .form-notice').textContent.includes('deactivated')`)
		root.shot(t, shots, "people")
		// He cannot log back in.
		bo.fill(t, "#login-name", "bob")
		bo.fill(t, "#login-password", password("bob"))
		bo.click(t, "#login-submit")
		bo.waitJS(t, "the deactivated reason", `document.querySelector('#login-error').textContent.includes('deactivated')`)
		root.click(t, personJS("bob")+" .reactivate")
		root.visible(t, personJS("bob")+`[data-deactivated="false"]`)
	})

	step("GrantAdmin", func(t *testing.T) {
		root.click(t, personJS("alice")+" .toggle-admin")
		root.visible(t, personJS("alice")+`[data-admin="true"]`)
		root.click(t, personJS("alice")+" .toggle-admin")
		root.visible(t, personJS("alice")+`[data-admin="false"]`)
	})

	step("ResetLinkSetsANewPassword", func(t *testing.T) {
		old := h.Login("alice", password("alice")) // a session that must end
		root.click(t, personJS("alice")+" .reset-password")
		root.click(t, "#confirm-ok")
		root.visible(t, "#reset-result #reset-link")
		root.visible(t, "#reset-copy")
		link := eval[string](t, root, `document.querySelector('#reset-link').textContent`)
		if !strings.HasPrefix(link, h.URL()+"/#reset=whr_") {
			t.Fatalf("the reset link reads %q", link)
		}
		al.navigate(t, link)
		al.visible(t, "#reset-form")
		if h := eval[string](t, al, `location.hash`); strings.Contains(h, "whr_") {
			t.Errorf("the code stays in the address bar: %s", h)
		}
		al.fill(t, "#reset-password", "alice picked this")
		al.fill(t, "#reset-repeat", "alice picked this")
		al.click(t, "#reset-submit")
		al.visible(t, "#app-screen")
		al.waitJS(t, "signed in as alice", `document.querySelector('#me-name').textContent === 'alice'`)
		old.Must(401, "GET", "/api/v1/me", nil)
		h.Login("alice", "alice picked this")
		// The link works once.
		al2 := newPage(t, b, "alice-again")
		pages = append(pages, al2)
		al2.navigate(t, link)
		al2.fill(t, "#reset-password", "another password")
		al2.fill(t, "#reset-repeat", "another password")
		al2.click(t, "#reset-submit")
		al2.waitJS(t, "the used-code reason", `document.querySelector('#reset-error').textContent.includes('already used')`)
	})

	step("UserSeesAndEndsSessionsAndChangesPassword", func(t *testing.T) {
		loginUI(t, bo, h.URL(), "bob", password("bob"))
		phone := h.Login("bob", password("bob"))
		bo.click(t, "#user-menu-button")
		bo.click(t, "#open-account")
		bo.visible(t, "#account-dialog")
		bo.waitJS(t, "two sessions", `document.querySelectorAll('#session-list .session-row').length === 2`)
		bo.visible(t, `#session-list .session-row[data-current="true"] .session-current`)
		if c := eval[string](t, bo, `document.querySelector('#session-list .session-row[data-current="true"] .session-client').textContent`); !strings.Contains(c, "Chrome") {
			t.Errorf("this browser is listed as %q", c)
		}
		bo.shot(t, shots, "account")
		bo.click(t, `#session-list .session-row[data-current="false"] .end-session`)
		bo.click(t, "#confirm-ok")
		bo.waitJS(t, "one session left", `document.querySelectorAll('#session-list .session-row').length === 1`)
		phone.Must(401, "GET", "/api/v1/me", nil)

		// A wrong current password: the form says so, the page stays.
		bo.fill(t, "#pw-current", "not my password")
		bo.fill(t, "#pw-new", "bob's new secret")
		bo.fill(t, "#pw-repeat", "bob's new secret")
		bo.click(t, "#pw-submit")
		bo.waitJS(t, "the wrong-password reason", `document.querySelector('#pw-error').textContent.includes('current password is wrong')`)
		other := h.Login("bob", password("bob"))
		bo.fill(t, "#pw-current", password("bob"))
		bo.fill(t, "#pw-new", "bob's new secret")
		bo.fill(t, "#pw-repeat", "bob's new secret")
		bo.click(t, "#pw-submit")
		bo.waitJS(t, "the confirmation", `document.querySelector('#pw-result').textContent.includes('Password changed')`)
		other.Must(401, "GET", "/api/v1/me", nil)
		h.Login("bob", "bob's new secret")
		testhub.NewClient(t, h.URL()).Must(401, "POST", "/api/v1/sessions", map[string]string{"name": "bob", "password": password("bob")})
		// bob's page keeps working.
		bo.gone(t, "#login-form")
		bo.visible(t, "#app-screen")
	})
}
