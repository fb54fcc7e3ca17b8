// notify.js — browser notifications: for mentions of you, DMs, and — for
// owners — approvals and invitations waiting for you. The browser's
// permission is asked only when you choose to (a prompt after you first
// send a message, or the bell menu), never on page load. Each room has a
// level: all, mentions (the default; every message in a DM) or none; the
// hub keeps it per person (PUT /rooms/{room}/notifications), so it follows
// you. Everything else only counts in the sound-free unread badges.

import { api, ApiError } from './api.js';
import { h, clear, icon } from './dom.js';
import { state, on, isDM, roomLabel, agentOwner } from './store.js';
import { actions } from './actions.js';
import { plainText } from './render/markdown.js';

const LEVELS = [
  ['all', 'All messages', 'Every new message in this room'],
  ['mentions', 'Mentions', 'Only when someone mentions you (every message in a DM)'],
  ['none', 'Nothing', 'Only the unread count'],
];
const ASK_AGAIN_MS = 14 * 864e5;

const supported = () => 'Notification' in window;
const permission = () => (supported() ? Notification.permission : 'unsupported');

let local = {}; // room → level, while the hub has no setting for it
let hubHasLevels = null;
const seen = new Set(); // approvals and invitations already announced
let primed = false;

// levelOf is the room's notification level for me.
export function levelOf(name) {
  const r = state.rooms.get(name);
  if (r && r.notify) return r.notify;
  if (local[name]) return local[name];
  return r && isDM(r) ? 'all' : 'mentions';
}

export function initNotify() {
  const actionsEl = document.getElementById('room-actions');
  const btn = h('button', {
    id: 'notify-button', type: 'button', class: 'ghost-button', 'aria-haspopup': 'true', 'aria-expanded': 'false',
    'aria-controls': 'notify-menu', onclick: () => toggleMenu(),
  }, icon('bell'));
  actionsEl.prepend(h('div', { class: 'notify-wrap' }, btn, h('div', { id: 'notify-menu', class: 'menu notify-menu', hidden: true })));
  document.addEventListener('click', (e) => {
    const menu = document.getElementById('notify-menu');
    if (!menu.hidden && !e.target.closest('.notify-wrap')) toggleMenu(false);
  });
  document.addEventListener('keydown', (e) => { if (e.key === 'Escape') toggleMenu(false); });
  on('current', () => { toggleMenu(false); renderButton(); });
  on('rooms', renderButton);
  on('message', onMessage);
  on('reply', onMessage); // a mention of you in a thread, too
  on('approvals', onApprovals);
  on('invitations', onInvitations);
}

// loadNotify runs after login, with the rooms loaded.
export function loadNotify() {
  try { local = JSON.parse(localStorage.getItem(`wh.notify.${state.me.name}`) || '{}') || {}; } catch { local = {}; }
  hubHasLevels = [...state.rooms.values()].some((r) => r.notify) || null;
  seen.clear();
  primed = false;
  renderButton();
}

// primeNotify marks what is already waiting at login as announced.
export function primeNotify() {
  for (const a of state.approvals.values()) seen.add('a' + a.id);
  for (const i of state.invitations.values()) seen.add('i' + i.id);
  primed = true;
}

// setLevelFromHub applies a "notify" feed item: the level changed on one of
// my devices.
export function setLevelFromHub(room, level) {
  const r = state.rooms.get(room);
  if (r) r.notify = level;
  hubHasLevels = true;
  renderButton();
  if (!document.getElementById('notify-menu').hidden) renderMenu();
}

function renderButton() {
  const btn = document.getElementById('notify-button');
  if (!btn) return;
  const room = state.current;
  btn.hidden = !room;
  if (!room) return;
  const level = levelOf(room);
  btn.dataset.level = level;
  clear(btn).append(icon(level === 'none' ? 'bell-off' : 'bell'));
  const words = { all: 'all messages', mentions: 'mentions only', none: 'off' }[level];
  btn.setAttribute('aria-label', `Notifications: ${words}`);
  btn.title = `Notifications for ${roomLabel(state.rooms.get(room))}: ${words}`;
}

function toggleMenu(open) {
  const menu = document.getElementById('notify-menu');
  const btn = document.getElementById('notify-button');
  if (!menu) return;
  const want = open ?? menu.hidden;
  if (want === !menu.hidden) return;
  menu.hidden = !want;
  btn.setAttribute('aria-expanded', String(want));
  if (want) { renderMenu(); menu.querySelector('input:checked')?.focus(); }
}

function renderMenu() {
  const menu = document.getElementById('notify-menu');
  const room = state.current;
  if (!room) return;
  const level = levelOf(room);
  const err = h('p', { class: 'form-error', role: 'alert', hidden: true });
  const group = h('fieldset', { class: 'notify-levels' },
    h('legend', null, `Notify me in ${roomLabel(state.rooms.get(room))}`),
    LEVELS.map(([value, label, sub]) => h('label', { class: 'notify-level' },
      h('input', {
        type: 'radio', name: 'notify-level', value, checked: value === level,
        onchange: () => choose(room, value, err),
      }),
      h('span', null, h('strong', null, label), h('span', { class: 'muted' }, sub)))));
  clear(menu).append(group, err, permissionRow());
}

function permissionRow() {
  const p = permission();
  if (p === 'granted') return h('p', { class: 'notify-perm muted', dataset: { permission: p } }, 'Desktop notifications are on in this browser.');
  if (p === 'denied') return h('p', { class: 'notify-perm muted', dataset: { permission: p } }, 'This browser blocks notifications from this site: allow them in its site settings. Until then, unread counts only.');
  if (p === 'unsupported') return h('p', { class: 'notify-perm muted', dataset: { permission: p } }, 'This browser cannot show notifications; unread counts only.');
  return h('div', { class: 'notify-perm', dataset: { permission: p } },
    h('p', { class: 'muted' }, 'Desktop notifications are off in this browser.'),
    h('button', { id: 'notify-enable', type: 'button', class: 'small-button primary', onclick: () => ask() }, 'Turn on desktop notifications'));
}

async function choose(room, level, err) {
  err.hidden = true;
  const r = state.rooms.get(room);
  try {
    if (hubHasLevels !== false) {
      const d = await api.setNotify(room, level);
      hubHasLevels = true;
      if (r) r.notify = (d && d.level) || level;
    }
  } catch (ex) {
    if (ex instanceof ApiError && ex.missing) hubHasLevels = false;
    else { err.textContent = ex.message; err.hidden = false; renderMenu(); return; }
  }
  if (hubHasLevels === false) {
    local[room] = level;
    try { localStorage.setItem(`wh.notify.${state.me.name}`, JSON.stringify(local)); } catch { /* this page only */ }
  }
  renderButton();
}

// ask requests the browser's permission; it must follow a click.
async function ask() {
  if (!supported()) return;
  try { await Notification.requestPermission(); } catch { /* old callback-only browsers */ }
  try { localStorage.setItem(`wh.notify.asked.${state.me?.name}`, String(Date.now())); } catch { /* ignore */ }
  hidePrompt();
  if (!document.getElementById('notify-menu').hidden) renderMenu();
}

// The prompt: after you first send a message here, if the browser has not
// been asked and you did not say "Not now" lately.
function maybePrompt() {
  if (permission() !== 'default' || document.getElementById('notify-prompt')) return;
  let last = 0;
  try { last = Number(localStorage.getItem(`wh.notify.asked.${state.me.name}`) || 0); } catch { last = 0; }
  if (Date.now() - last < ASK_AGAIN_MS) return;
  const bar = h('div', { id: 'notify-prompt', class: 'notify-prompt', role: 'region', 'aria-label': 'Notifications' },
    icon('bell'),
    h('p', null, 'Get a desktop notification when someone mentions you, sends you a DM, or an agent of yours waits for your approval?'),
    h('div', { class: 'notify-prompt-actions' },
      h('button', { id: 'notify-prompt-yes', type: 'button', class: 'small-button primary', onclick: () => ask() }, 'Turn on'),
      h('button', {
        id: 'notify-prompt-no', type: 'button', class: 'small-button',
        onclick: () => { try { localStorage.setItem(`wh.notify.asked.${state.me.name}`, String(Date.now())); } catch { /* ignore */ } hidePrompt(); },
      }, 'Not now')));
  const form = document.getElementById('composer-form');
  form.parentElement.insertBefore(bar, form);
}

function hidePrompt() { document.getElementById('notify-prompt')?.remove(); }

export function resetNotify() { hidePrompt(); toggleMenu(false); }

function away(room) {
  return document.hidden || !document.hasFocus() || room !== state.current;
}

function mentionsMe(m) {
  const me = state.me?.name;
  return (m.mentions || []).some((x) => x.kind === 'user' && x.user === me);
}

function onMessage(m) {
  if (!state.me) return;
  const mine = m.authorKind === 'user' && m.author === state.me.name;
  if (mine) { maybePrompt(); return; }
  if (m.authorKind === 'system' || m.kind === 'tool' || m.kind === 'progress' || m.partial) return;
  if (Date.now() - new Date(m.createdAt) > 2 * 60e3) return; // caught up after being away: the badges say it
  const level = levelOf(m.room);
  const r = state.rooms.get(m.room);
  const wanted = level === 'all' || (level === 'mentions' && (mentionsMe(m) || (r && isDM(r))));
  if (!wanted || !away(m.room)) return;
  const who = m.authorKind === 'agent' ? '@' + m.author : m.author;
  const where = r && isDM(r) ? '' : ` in ${roomLabel(r || { name: m.room })}`;
  show(`${who}${mentionsMe(m) ? ' mentioned you' : ''}${where}`, plainText(m.text, 180), `wh-m-${m.id}`, () => actions.go(m.room));
}

function onApprovals() {
  if (!state.me || !primed) return;
  for (const a of state.approvals.values()) {
    if (seen.has('a' + a.id)) continue;
    seen.add('a' + a.id);
    if (a.status !== 'pending' || a.owner !== state.me.name || !away(a.room)) continue;
    show(`@${a.agent} needs your approval`, `${a.tool || 'a tool'}: ${String(a.summary || '').slice(0, 160)}`, `wh-a-${a.id}`, () => a.room && actions.go(a.room));
  }
}

function onInvitations() {
  if (!state.me || !primed) return;
  for (const i of state.invitations.values()) {
    if (seen.has('i' + i.id)) continue;
    seen.add('i' + i.id);
    if (i.status !== 'pending' || (i.owner || agentOwner(i.agent)) !== state.me.name || !document.hidden && document.hasFocus()) continue;
    show(`@${i.requestedBy} invites @${i.agent}`, `to ${String(i.room).startsWith('dm:') ? 'a DM' : '#' + i.room} — accept or decline in your Inbox`, `wh-i-${i.id}`, () => {
      document.getElementById('tab-inbox')?.click();
    });
  }
}

function show(title, body, tag, onclick) {
  if (permission() !== 'granted') return;
  let n;
  try {
    n = new Notification(title, { body, tag, icon: '/favicon.svg' });
  } catch { return; } // some browsers only notify from a service worker
  n.onclick = () => { window.focus(); onclick(); n.close(); };
}
