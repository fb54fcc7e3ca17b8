package browser

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
)

const rootPassword = "correct horse battery"

// password is the one testhub.AddUser gives a user.
func password(name string) string { return "pw-" + name + "-secret" }

// suite is one hub, one bridge with alice's demo agent, and one Chromium
// with a browser context per user: root (the admin), alice (the agent's
// owner) and bob (a member of her room). The scenarios run in order and
// build on each other.
type suite struct {
	h     *testhub.Hub
	addr  string // host:port, kept when the hub restarts
	shots string // where screenshots go, "" for nowhere

	admin, alice *testhub.Client // API clients
	root, al, bo *page
	br           *testhub.Bridge // alice's bridge
	browser      context.Context // the Chromium all pages share
	other        *page           // a fourth browser context: bob's second browser, then carol's
}

func TestUI(t *testing.T) {
	began := time.Now()
	s := &suite{shots: screenshots(t)}
	s.h = testhub.Start(t, testhub.Options{})
	s.addr = strings.TrimPrefix(s.h.URL(), "http://")
	b := startBrowser(t)
	s.root, s.al, s.bo = newPage(t, b, "root"), newPage(t, b, "alice"), newPage(t, b, "bob")
	s.other = newPage(t, b, "second")

	s.step(t, "SetupAdminInUI", s.setupAdmin)
	s.admin = s.h.Login("root", rootPassword)
	s.alice = s.h.AddUser(s.admin, "alice")
	s.h.AddUser(s.admin, "bob")
	s.browser = b
	s.br = s.h.StartBridge(s.alice, nil, bridge.AgentConfig{Name: "demo", Harness: "demo",
		Options:    map[string]string{"steps": "3", "step": "200ms"},
		PolicyFile: bridge.PolicyConfig{Address: "members"}})

	s.step(t, "UsersLogIn", s.usersLogIn)
	s.step(t, "FirstMinute", s.firstMinute)
	s.step(t, "OwnerEnrollsThisBrowserWithTheBridgesCode", s.enrollBrowser)
	s.step(t, "RoomAndAgentAddedInUI", s.roomAndAgent)
	s.step(t, "LiveMessageWithoutReload", s.liveMessage)
	s.step(t, "MentionShowsReceiptAndReply", s.mentionReceipt)
	s.step(t, "OwnerApprovesMembersRequest", s.approval)
	s.step(t, "InvitationAcceptedInInbox", s.consent)
	s.step(t, "SlashCommands", s.slashCommands)
	s.step(t, "Notifications", s.notifications)
	s.step(t, "HostileMarkupStaysInert", s.markupAsText)
	s.step(t, "MarkdownRenders", s.markdown)
	s.step(t, "EditAndReactionLive", s.editAndReact)
	s.step(t, "ImagePastedAndShown", s.uploads)
	s.step(t, "SearchOnlyReadableRooms", s.search)
	s.step(t, "SearchJumpsFarBack", s.searchFarBack)
	s.step(t, "UnreadFollowsThePerson", s.unreadFollows)
	s.step(t, "NewUserLandsInGeneral", s.newUserInGeneral)
	s.step(t, "TimelineDialog", s.timeline)
	s.step(t, "APITokenFromUserMenu", s.apiToken)
	s.step(t, "FullPolicyInAgentPanel", s.fullPolicy)
	s.step(t, "RoomCeilingAndModeratedMention", s.ceilingAndModeration)
	s.step(t, "BridgesListedAndRevoked", s.bridges)
	s.step(t, "PhoneViewport", s.phone)
	s.step(t, "OwnerEnrollsAPhoneAndApprovesFromIt", s.phoneApproval)
	s.step(t, "RevokedDeviceDecisionShownUnverified", s.unverified)
	s.step(t, "ReconnectAfterHubRestart", s.reconnect)
	t.Logf("browser scenarios took %s", time.Since(began).Round(time.Millisecond))
}

// step runs one scenario; later ones build on it, so a failure stops the
// run. Every page must stay free of JavaScript errors.
func (s *suite) step(t *testing.T, name string, f func(*testing.T)) {
	t.Helper()
	ok := t.Run(name, func(t *testing.T) {
		f(t)
		for _, p := range []*page{s.root, s.al, s.bo, s.other} {
			if p != nil {
				p.noErrors(t)
			}
		}
	})
	if !ok {
		t.FailNow()
	}
}

func (s *suite) setupAdmin(t *testing.T) {
	token := s.h.SetupToken()
	if token == "" {
		t.Fatal("a fresh hub has no setup token")
	}
	p := s.root
	p.navigate(t, s.h.URL()+"/")
	p.visible(t, "#setup-token")
	p.fill(t, "#setup-token", token)
	p.fill(t, "#setup-name", "root")
	p.fill(t, "#setup-password", rootPassword)
	p.click(t, "#setup-submit")
	p.visible(t, "#app-screen")
	p.gone(t, "#auth-screen")
	p.waitJS(t, "signed in as root", `document.querySelector('#me-name').textContent === 'root'`)
	p.visible(t, "#room-empty #empty-create-room") // no rooms yet
	p.click(t, "#user-menu-button")
	p.visible(t, "#open-admin") // admins can add users
	p.click(t, "#user-menu-button")
	p.gone(t, "#user-menu")
	if s.h.SetupToken() != "" {
		t.Error("the setup token is still valid after setup")
	}
}

func (s *suite) usersLogIn(t *testing.T) {
	for _, p := range []*page{s.al, s.bo} {
		p.navigate(t, s.h.URL()+"/")
		p.visible(t, "#login-name")
	}
	// A wrong password is refused, in words.
	b := s.bo
	b.fill(t, "#login-name", "bob")
	b.fill(t, "#login-password", "not the password")
	b.click(t, "#login-submit")
	b.visible(t, "#login-error")
	b.waitJS(t, "the reason", `document.querySelector('#login-error').textContent.includes('do not match')`)
	b.fill(t, "#login-password", password("bob"))
	b.click(t, "#login-submit")

	a := s.al
	a.fill(t, "#login-name", "alice")
	a.fill(t, "#login-password", password("alice"))
	a.shot(t, s.shots, "login")
	a.click(t, "#login-submit")
	for _, p := range []*page{a, b} {
		p.visible(t, "#app-screen")
		p.waitJS(t, "signed in as "+p.name, fmt.Sprintf(`document.querySelector('#me-name').textContent === %s`, js(p.name)))
		p.visible(t, "#room-empty")
		p.waitJS(t, "no admin menu", `document.querySelector('#open-admin').hidden`)
	}
}

func (s *suite) roomAndAgent(t *testing.T) {
	a, b := s.al, s.bo
	a.click(t, "#create-room")
	a.visible(t, "#create-room-dialog")
	a.fill(t, "#new-room-name", "dev")
	a.fill(t, "#new-room-topic", "Parser refactor")
	a.click(t, "#new-room-submit")
	a.gone(t, "#create-room-dialog")
	inDev := `location.hash === '#/r/dev' && document.querySelector('#room-title').textContent === '#dev'`
	a.waitJS(t, "#dev open", inDev)
	a.visible(t, `.room-link[data-room="dev"].active[aria-current="page"]`)
	a.visible(t, `[data-testid="messages-empty"]`)

	// bob joins from the public room list.
	b.click(t, "#browse-rooms")
	b.click(t, `.public-room[data-room="dev"] button.join`)
	b.waitJS(t, "#dev open", inDev)
	b.visible(t, `.room-link[data-room="dev"].active`)
	a.waitJS(t, "the member count to reach 2", `document.querySelector('#member-count').textContent === '2'`)

	// alice adds her own agent: it joins at once.
	a.fill(t, "#add-agent-input", "alice/demo")
	a.click(t, "#add-agent-submit")
	a.waitJS(t, "the joined note", `document.querySelector('#add-agent-note').textContent.includes('joined')`)
	agent := `#agent-panel .agent-row[data-handle="alice/demo"][data-status="idle"]`
	a.visible(t, agent+" button.stop")
	a.visible(t, agent+" .policy-details")
	// bob sees it live, without the owner's controls.
	b.visible(t, agent+` .agent-mode[data-mode="start"]`)
	b.waitJS(t, "no owner controls", `!document.querySelector('.agent-row[data-handle="alice/demo"] :is(button.stop, button.remove-agent, .policy-details)')`)
}

// messageJS is a JavaScript expression for the first message by author
// whose body contains text (null if there is none). Activity blocks have no
// data-id, so only whole messages match.
func messageJS(author, text string) string {
	sel := fmt.Sprintf(`#messages .message[data-id][data-author=%q]`, author)
	return fmt.Sprintf(`([...document.querySelectorAll(%s)].find((m) => (m.querySelector('.message-body')?.textContent || '').includes(%s)) || null)`, js(sel), js(text))
}

// countJS counts the messages whose body contains text.
func countJS(text string) string {
	return fmt.Sprintf(`[...document.querySelectorAll('#messages .message[data-id]')].filter((m) => (m.querySelector('.message-body')?.textContent || '').includes(%s)).length`, js(text))
}

// noDuplicateIDsJS holds when no message id is shown twice.
const noDuplicateIDsJS = `(() => { const ids = [...document.querySelectorAll('#messages [data-id]')].map((e) => e.dataset.id); return ids.length === new Set(ids).size; })()`

func (s *suite) liveMessage(t *testing.T) {
	a, b := s.al, s.bo
	eval[bool](t, a, `window.__sameDocument = true`)
	b.send(t, "hello from bob, nothing to do with agents")
	msg := messageJS("bob", "hello from bob")
	a.waitJS(t, "bob's message on alice's page", msg)
	b.waitJS(t, "bob's message on his own page", msg)
	for _, p := range []*page{a, b} {
		if n := eval[int](t, p, countJS("hello from bob")); n != 1 {
			t.Errorf("%s's page shows bob's message %d times", p.name, n)
		}
		if !eval[bool](t, p, noDuplicateIDsJS) {
			t.Errorf("%s's page shows a message id twice", p.name)
		}
	}
	if !eval[bool](t, a, `window.__sameDocument === true`) {
		t.Error("alice's page reloaded to show the message")
	}
	if eval[bool](t, b, msg+`.querySelector('.receipts').checkVisibility()`) {
		t.Error("a message without agent mentions shows receipts")
	}
}
