package browser

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// hover rests the pointer on the first element matching sel, as a person
// about to click one of its hover actions.
func (p *page) hover(t testing.TB, sel string) {
	t.Helper()
	p.visible(t, sel)
	xy := eval[[]float64](t, p, fmt.Sprintf(`(() => { const e = document.querySelector(%s); e.scrollIntoView({ block: 'center' }); const r = e.getBoundingClientRect(); return [r.left + r.width / 2, r.top + Math.min(r.height / 2, 20)]; })()`, js(sel)))
	p.do(t, "hover "+sel, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, xy[0], xy[1]))
}

// messageSel is a selector for the channel message with id.
func messageSel(id string) string { return fmt.Sprintf(`#messages .message[data-id="%s"]`, id) }

// editAndReact: alice edits her message and bob sees it change live; bob
// reacts and alice sees the count, then he takes it back; alice deletes a
// message and a tombstone stays on both screens.
func (s *suite) editAndReact(t *testing.T) {
	a, b := s.al, s.bo
	for _, p := range []*page{a, b} {
		p.click(t, `.room-link[data-room="dev"]`)
		p.waitJS(t, "#dev open", `location.hash === '#/r/dev' && document.querySelector('#room-title').textContent === '#dev'`)
	}
	a.send(t, "the plan is in teh wiki")
	msg := messageJS("alice", "the plan is in teh wiki")
	for _, p := range []*page{a, b} {
		p.waitJS(t, "alice's message", msg)
	}
	id := eval[string](t, a, msg+`.dataset.id`)
	sel := messageSel(id)

	a.hover(t, sel)
	a.click(t, sel+" button.edit-message")
	a.visible(t, sel+" .edit-form .edit-text")
	a.fill(t, sel+" .edit-text", "the plan is in the wiki")
	a.do(t, "press Enter", pressEnter())
	a.gone(t, sel+" .edit-form")
	for _, p := range []*page{a, b} {
		p.waitJS(t, "the edited text", fmt.Sprintf(`(document.querySelector(%s)?.querySelector('.message-body')?.textContent || '').includes('the plan is in the wiki')`, js(sel)))
		p.visible(t, sel+" .message-edited")
	}

	b.hover(t, sel)
	b.click(t, sel+" button.react")
	b.visible(t, "#reaction-picker")
	b.shot(t, s.shots, "reactions")
	b.click(t, `#reaction-picker .quick-reaction[data-emoji="👍"]`)
	b.gone(t, "#reaction-picker")
	a.waitJS(t, "bob's reaction on alice's screen", fmt.Sprintf(`document.querySelector(%s)?.dataset.count === '1'`, js(sel+` .reaction[data-emoji="👍"]`)))
	b.visible(t, sel+` .reaction.mine[data-emoji="👍"]`)
	if eval[bool](t, a, fmt.Sprintf(`document.querySelector(%s).classList.contains('mine')`, js(sel+` .reaction[data-emoji="👍"]`))) {
		t.Error("alice's screen shows bob's reaction as hers")
	}
	// A reaction of his own words, then the thumbs up taken back.
	b.hover(t, sel)
	b.click(t, sel+" button.react")
	b.fill(t, "#reaction-custom", ":shipit:")
	b.do(t, "press Enter", pressEnter())
	a.visible(t, sel+` .reaction[data-emoji=":shipit:"]`)
	b.click(t, sel+` .reaction[data-emoji="👍"]`)
	a.gone(t, sel+` .reaction[data-emoji="👍"]`)

	// A reaction redraws the message; an edit alice has open stays, with
	// what she typed.
	a.hover(t, sel)
	a.click(t, sel+" button.edit-message")
	a.fill(t, sel+" .edit-text", "half typed")
	b.hover(t, sel)
	b.click(t, sel+" button.react")
	b.click(t, `#reaction-picker .quick-reaction[data-emoji="👍"]`)
	a.visible(t, sel+` .reaction[data-emoji="👍"]`)
	if v := eval[string](t, a, fmt.Sprintf(`document.querySelector(%s)?.value || ''`, js(sel+" .edit-form .edit-text"))); v != "half typed" {
		t.Fatalf("alice's open edit after bob's reaction: %q, want what she typed", v)
	}
	a.click(t, sel+" .edit-cancel")
	a.gone(t, sel+" .edit-form")
	a.visible(t, sel+" .message-body")

	// Deleting asks first and leaves a tombstone.
	a.send(t, "this one was a mistake")
	del := messageJS("alice", "this one was a mistake")
	for _, p := range []*page{a, b} {
		p.waitJS(t, "the message to delete", del)
	}
	did := eval[string](t, a, del+`.dataset.id`)
	a.hover(t, messageSel(did))
	a.click(t, messageSel(did)+" button.delete-message")
	a.click(t, "#confirm-ok")
	for _, p := range []*page{a, b} {
		p.visible(t, messageSel(did)+" .message-tombstone")
		if n := eval[int](t, p, countJS("this one was a mistake")); n != 0 {
			t.Errorf("%s's page still shows the deleted text", p.name)
		}
	}
	if eval[bool](t, b, fmt.Sprintf(`!!document.querySelector(%s)`, js(messageSel(did)+" .message-actions"))) {
		t.Error("a tombstone offers actions")
	}
}

// pngJS makes a small PNG in the page and pastes it into the message box
// the way a browser does after copying an image.
const pngJS = `(async () => {
	const c = document.createElement('canvas');
	c.width = 120; c.height = 80;
	const g = c.getContext('2d');
	g.fillStyle = '#4f46e5'; g.fillRect(0, 0, 120, 80);
	g.fillStyle = '#fff'; g.fillRect(20, 20, 80, 40);
	const blob = await new Promise((r) => c.toBlob(r, 'image/png'));
	const dt = new DataTransfer();
	dt.items.add(new File([blob], 'screenshot.png', { type: 'image/png' }));
	const ta = document.querySelector('#composer');
	ta.focus();
	ta.dispatchEvent(new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true }));
	return true;
})()`

// uploads: alice pastes a screenshot and bob sees the image (served to
// him as a member) and opens it large; a log file attached with the button
// reaches bob as a download link.
func (s *suite) uploads(t *testing.T) {
	a, b := s.al, s.bo
	evalAwait[bool](t, a, pngJS)
	a.visible(t, `#attachments .attachment[data-state="ready"][data-name="screenshot.png"] img.attachment-thumb`)
	a.waitJS(t, "Send enabled for a message with only a file", `!document.querySelector('#send').disabled`)
	a.do(t, "press Enter", chromedp.Focus(css("#composer")), pressEnter())
	a.gone(t, "#attachments .attachment")
	img := `#messages .message[data-author="alice"] .file-image img[alt="screenshot.png"]`
	for _, p := range []*page{a, b} {
		p.waitJS(t, "the image, loaded", fmt.Sprintf(`(() => { const i = [...document.querySelectorAll(%s)].pop(); return !!i && i.complete && i.naturalWidth === 120; })()`, js(img)))
	}
	b.click(t, `#messages .message[data-author="alice"] .file-image:last-of-type button`)
	b.visible(t, "#lightbox img.lightbox-image")
	b.waitJS(t, "the large image", `document.querySelector('#lightbox img').naturalWidth === 120`)
	b.shot(t, s.shots, "lightbox")
	b.do(t, "press Esc", chromedp.KeyEvent(kb.Escape))
	b.gone(t, "#lightbox")

	path := filepath.Join(t.TempDir(), "build.log")
	if err := os.WriteFile(path, []byte("build started\nbuild ok\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a.do(t, "attach build.log", chromedp.SetUploadFiles(css("#file-input"), []string{path}, chromedp.NodeReady))
	a.visible(t, `#attachments .attachment[data-state="ready"][data-name="build.log"]`)
	a.shot(t, s.shots, "uploads")
	a.send(t, "the build log")
	link := `#messages .message[data-author="alice"] a.file-link[download="build.log"]`
	b.visible(t, link)
	b.waitJS(t, "the link is the hub's", fmt.Sprintf(`document.querySelector(%s).getAttribute('href').startsWith('/api/v1/rooms/dev/files/')`, js(link)))
	got := evalAwait[string](t, b, fmt.Sprintf(`fetch(document.querySelector(%s).href).then((r) => r.text())`, js(link)))
	if got != "build started\nbuild ok\n" {
		t.Errorf("bob downloads %q", got)
	}

	// A file in a thread: alice replies under her message with a second log,
	// attached in the thread's own composer; bob finds it in the thread.
	msg := messageJS("alice", "the build log")
	id := eval[string](t, a, msg+`.dataset.id`)
	a.hover(t, messageSel(id))
	a.click(t, messageSel(id)+" button.reply-thread")
	a.visible(t, "#thread-panel #thread-composer")
	path2 := filepath.Join(t.TempDir(), "rerun.log")
	if err := os.WriteFile(path2, []byte("rerun ok\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a.do(t, "attach rerun.log in the thread", chromedp.SetUploadFiles(css("#thread-file-input"), []string{path2}, chromedp.NodeReady))
	a.visible(t, `#thread-attachments .attachment[data-state="ready"][data-name="rerun.log"]`)
	if eval[bool](t, a, `!!document.querySelector('#attachments .attachment')`) {
		t.Error("the thread's file shows in the room's composer too")
	}
	a.fill(t, "#thread-composer", "and the rerun")
	a.do(t, "press Enter", pressEnter())
	a.gone(t, "#thread-attachments .attachment")
	reply := threadMessageJS("alice", "and the rerun")
	a.waitJS(t, "the reply with its file", reply+`?.querySelector('a.file-link[download="rerun.log"]') != null`)
	a.closeThread(t)
	b.waitJS(t, "the thread line under the build log", messageJS("alice", "the build log")+`?.querySelector('.thread-line') != null`)
	b.openThreadOf(t, messageJS("alice", "the build log"))
	b.waitJS(t, "the reply's file in bob's thread", reply+`?.querySelector('a.file-link[download="rerun.log"]') != null`)
	got = evalAwait[string](t, b, `fetch(`+reply+`.querySelector('a.file-link').href).then((r) => r.text())`)
	if got != "rerun ok\n" {
		t.Errorf("bob downloads %q from the thread", got)
	}
	b.closeThread(t)
}

// search: bob finds a message of #dev by a word and jumps to it; the same
// word in alice's private room is not among his results, though it is
// among hers.
func (s *suite) search(t *testing.T) {
	a, b := s.al, s.bo
	s.alice.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "secret-plans", "private": true})
	s.alice.Post("secret-plans", "the zebra budget for next quarter")
	s.alice.Post("dev", "zebra crossing tests are flaky again")
	for i := 0; i < 8; i++ { // push it up the page
		s.alice.Post("dev", fmt.Sprintf("filler %d", i))
	}
	b.click(t, `.room-link[data-room="design"]`)
	b.waitJS(t, "#design open", `location.hash === '#/r/design'`)
	b.click(t, "#search-button")
	b.visible(t, "#search-dialog #search-input")
	b.fill(t, "#search-input", "zebra")
	hit := `#search-results .search-result[data-room="dev"]`
	b.visible(t, hit+" mark")
	b.waitJS(t, "the highlighted word", fmt.Sprintf(`document.querySelector(%s).textContent.toLowerCase() === 'zebra'`, js(hit+" mark")))
	if eval[bool](t, b, `!!document.querySelector('#search-results .search-result[data-room="secret-plans"]')`) {
		t.Fatal("bob's search shows a message from a private room he is not in")
	}
	b.shot(t, s.shots, "search")
	id := eval[string](t, b, fmt.Sprintf(`document.querySelector(%s).dataset.id`, js(hit)))
	b.click(t, hit+" button")
	b.gone(t, "#search-dialog")
	b.waitJS(t, "#dev open at the message", fmt.Sprintf(`location.hash === '#/r/dev' && !!document.querySelector(%s)`, js(messageSel(id)+".flash")))

	// alice, a member of the private room, finds it there.
	a.do(t, "press Ctrl+K", chromedp.KeyEvent("k", chromedp.KeyModifiers(chromedp.ModifierCtrl)))
	a.visible(t, "#search-input")
	a.fill(t, "#search-input", "zebra bud*")
	a.visible(t, `#search-results .search-result[data-room="secret-plans"]`)
	a.do(t, "press Esc", chromedp.KeyEvent(kb.Escape))
	a.gone(t, "#search-dialog")
}

// searchFarBack: a hit hundreds of messages back opens in a page around it
// rather than by reading every page since; the view says it is not the
// latest, scrolling down reads on, new messages wait below it, and "Back
// to the latest" shows the newest.
func (s *suite) searchFarBack(t *testing.T) {
	b := s.bo
	s.alice.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "logbook"})
	s.alice.Must(200, "POST", "/api/v1/rooms/logbook/members", map[string]string{"user": "bob"})
	s.alice.Post("logbook", "the walrus protocol draft is attached")
	for i := 0; i < 600; i++ {
		s.alice.Post("logbook", fmt.Sprintf("busy day %d", i))
	}
	// A browser opened since: only the latest page of #logbook, when opened.
	b.do(t, "reload", chromedp.Reload())
	b.visible(t, `.room-link[data-room="logbook"]`)
	b.click(t, "#search-button")
	b.visible(t, "#search-dialog #search-input")
	b.fill(t, "#search-input", "walrus")
	hit := `#search-results .search-result[data-room="logbook"]`
	b.visible(t, hit+" mark")
	id := eval[string](t, b, fmt.Sprintf(`document.querySelector(%s).dataset.id`, js(hit)))
	b.click(t, hit+" button")
	b.gone(t, "#search-dialog")
	b.waitJS(t, "#logbook open at the message", fmt.Sprintf(`location.hash === '#/r/logbook' && !!document.querySelector(%s)`, js(messageSel(id)+".flash")))
	if n := eval[int](t, b, `document.querySelectorAll('#messages .message[data-id]').length`); n > 200 {
		t.Errorf("the jump loaded %d messages; want the page around the hit", n)
	}
	b.waitJS(t, "the way back to the latest", `!document.querySelector('#jump-latest').hidden && document.querySelector('#jump-latest').textContent.includes('Back to the latest')`)

	// Scrolling down reads the next page.
	before := eval[int](t, b, `document.querySelectorAll('#messages .message[data-id]').length`)
	b.waitJS(t, "the next page below", fmt.Sprintf(`(() => { const l = document.querySelector('#messages'); l.scrollTop = l.scrollHeight; l.dispatchEvent(new Event('scroll')); return document.querySelectorAll('#messages .message[data-id]').length > %d; })()`, before))

	// A new message waits below, not under the old page. A message to
	// #dev after it shows the page has handled the one before (the feed
	// keeps order).
	devBadge := `(document.querySelector('.room-link[data-room="dev"] .unread-count')?.textContent || '0')`
	was := eval[string](t, b, devBadge)
	s.alice.Post("logbook", "fresh news from today")
	s.alice.Post("dev", "a marker after the news")
	fresh := messageJS("alice", "fresh news from today")
	b.waitJS(t, "the marker counted in #dev", fmt.Sprintf(`%s !== %s`, devBadge, js(was)))
	if eval[bool](t, b, fresh+` !== null`) {
		t.Error("a new message was appended under a page from the middle")
	}
	b.click(t, "#jump-latest")
	b.waitJS(t, "the newest message", fresh)
	b.waitJS(t, "the latest, at the bottom", `document.querySelector('#jump-latest').hidden`)
}

// unreadFollows: bob's unread count lives on the hub: a second browser of
// his shows it, and reading on one clears it on the other, live.
func (s *suite) unreadFollows(t *testing.T) {
	b := s.bo
	b.click(t, `.room-link[data-room="dev"]`)
	b.waitJS(t, "#dev open", `location.hash === '#/r/dev'`)
	s.alice.Must(200, "POST", "/api/v1/dms", map[string]string{"with": "bob"})
	s.alice.Post("dm:alice:bob", "are you around for a quick review?")
	badge := `.room-link[data-room="dm:alice:bob"] .unread-count`
	b.waitJS(t, "the DM's badge", fmt.Sprintf(`document.querySelector(%s)?.textContent === '1'`, js(badge)))

	// bob on another browser (his phone, say): the same count.
	b2 := s.second(t)
	b2.login(t, s.h.URL(), "bob")
	b2.waitJS(t, "the DM's badge on the second browser", fmt.Sprintf(`document.querySelector(%s)?.textContent === '1'`, js(badge)))
	b2.visible(t, badge+".has-mentions") // a DM message is for him
	b2.shot(t, s.shots, "unread")

	// He reads it on the first; the second follows.
	b.click(t, `.room-link[data-room="dm:alice:bob"]`)
	b.waitJS(t, "the DM open", `location.hash === '#/r/' + encodeURIComponent('dm:alice:bob')`)
	b.gone(t, badge)
	b2.gone(t, badge)
	b.click(t, `.room-link[data-room="dev"]`)
	b.waitJS(t, "#dev open", `location.hash === '#/r/dev'`)

	// A click the room list redraws under, between the press and the
	// release (a message arrives and the DM gets its badge), still opens
	// the room: the list keeps its links in place.
	link := `.room-link[data-room="dm:alice:bob"]`
	xy := eval[[]float64](t, b, fmt.Sprintf(`(() => { const r = document.querySelector(%s).getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; })()`, js(link)))
	b.do(t, "press on the DM", chromedp.MouseEvent(input.DispatchMouseEventTypeMousePressed, xy[0], xy[1], chromedp.ButtonLeft, chromedp.ClickCount(1)))
	s.alice.Post("dm:alice:bob", "one more thing")
	b.waitJS(t, "the DM's badge", fmt.Sprintf(`document.querySelector(%s)?.textContent === '1'`, js(badge)))
	b.do(t, "release on the DM", chromedp.MouseEvent(input.DispatchMouseEventTypeMouseReleased, xy[0], xy[1], chromedp.ButtonLeft, chromedp.ClickCount(1)))
	b.waitJS(t, "the DM open", `location.hash === '#/r/' + encodeURIComponent('dm:alice:bob')`)
	b.gone(t, badge)
	b.click(t, `.room-link[data-room="dev"]`)
	b.waitJS(t, "#dev open", `location.hash === '#/r/dev'`)
}

// newUserInGeneral: with #general among the default rooms, a user added
// now lands in it on first login.
func (s *suite) newUserInGeneral(t *testing.T) {
	s.admin.Must(201, "POST", "/api/v1/rooms", map[string]any{"name": "general", "topic": "Everyone"})
	s.admin.Must(200, "PUT", "/api/v1/settings", map[string]any{"defaultRooms": []string{"general"}})
	s.h.AddUser(s.admin, "carol")
	p := s.second(t)
	p.logout(t)
	p.login(t, s.h.URL(), "carol")
	p.waitJS(t, "carol in #general", `location.hash === '#/r/general' && document.querySelector('#room-title').textContent === '#general'`)
	p.visible(t, "#composer")
	p.visible(t, `.room-link[data-room="general"].active`)
}

// second is the suite's fourth browser context: bob's other browser, then
// carol's.
func (s *suite) second(*testing.T) *page { return s.other }

// login signs in as name from the login screen.
func (p *page) login(t testing.TB, base, name string) {
	t.Helper()
	p.navigate(t, base+"/")
	p.visible(t, "#login-name")
	p.fill(t, "#login-name", name)
	p.fill(t, "#login-password", password(name))
	p.click(t, "#login-submit")
	p.visible(t, "#app-screen")
	p.waitJS(t, "signed in as "+name, fmt.Sprintf(`document.querySelector('#me-name').textContent === %s`, js(name)))
}

func (p *page) logout(t testing.TB) {
	t.Helper()
	p.click(t, "#user-menu-button")
	p.click(t, "#logout")
	p.visible(t, "#login-name")
}
