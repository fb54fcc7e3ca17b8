// sidebar.js — the room and DM lists with unread counts, the user menu, and
// the drawer behaviour on narrow screens.

import { h, morphChildren, avatar, initials, hueClass, icon } from './dom.js';
import { state, on, isDM, roomLabel } from './store.js';
import { unreadCount, unreadLabel, totalUnread, mentionCount } from './unread.js';

export const roomHref = (name) => `#/r/${encodeURIComponent(name)}`;

const app = () => document.getElementById('app-screen');

export function initSidebar({ onLogout, onPairing, onTokens, onAdmin, onAccount, onCreateRoom, onBrowse, onStartDM }) {
  const btn = document.getElementById('user-menu-button');
  const menu = document.getElementById('user-menu');
  const setMenu = (open) => {
    menu.hidden = !open;
    btn.setAttribute('aria-expanded', String(open));
    if (open) menu.querySelector('button:not([hidden])')?.focus();
  };
  btn.addEventListener('click', () => setMenu(menu.hidden));
  document.addEventListener('click', (e) => { if (!menu.hidden && !menu.contains(e.target) && !btn.contains(e.target)) setMenu(false); });
  menu.addEventListener('keydown', (e) => {
    const items = [...menu.querySelectorAll('button:not([hidden])')];
    const i = items.indexOf(document.activeElement);
    if (e.key === 'Escape') { setMenu(false); btn.focus(); }
    else if (e.key === 'ArrowDown') { e.preventDefault(); items[(i + 1) % items.length].focus(); }
    else if (e.key === 'ArrowUp') { e.preventDefault(); items[(i - 1 + items.length) % items.length].focus(); }
  });
  const item = (id, fn) => document.getElementById(id).addEventListener('click', () => { setMenu(false); fn(); });
  item('logout', onLogout);
  item('open-pairing', onPairing);
  item('open-tokens', onTokens);
  item('open-admin', onAdmin);
  item('open-account', onAccount);
  document.getElementById('create-room').addEventListener('click', onCreateRoom);
  document.getElementById('browse-rooms').addEventListener('click', onBrowse);
  document.getElementById('start-dm').addEventListener('click', onStartDM);

  const toggle = document.getElementById('menu-toggle');
  toggle.addEventListener('click', () => setDrawer(!app().classList.contains('drawer-open')));
  document.getElementById('drawer-scrim').addEventListener('click', () => { setDrawer(false); setPanelDrawer(false); });
  document.addEventListener('keydown', (e) => {
    if (e.key === 'Escape' && app().classList.contains('drawer-open')) { setDrawer(false); toggle.focus(); }
  });

  on('rooms', renderRooms);
  on('unread', renderRooms);
  on('current', renderRooms);
}

export function setDrawer(open) {
  app().classList.toggle('drawer-open', open);
  document.getElementById('menu-toggle').setAttribute('aria-expanded', String(open));
  syncScrim();
}

export function setPanelDrawer(open) {
  app().classList.toggle('panel-open', open);
  syncScrim();
}

function syncScrim() {
  const a = app();
  document.getElementById('drawer-scrim').hidden = !(a.classList.contains('drawer-open') || a.classList.contains('panel-open'));
}

export function renderMe() {
  const me = state.me;
  const av = document.getElementById('me-avatar');
  av.className = `avatar avatar-sm ${hueClass(me.name)}`;
  av.textContent = initials(me.name);
  document.getElementById('me-name').textContent = me.display || me.name;
  document.getElementById('user-menu-button').title = `Signed in as @${me.name}`;
  document.getElementById('open-admin').hidden = !me.admin;
}

function roomItem(r) {
  const n = unreadCount(r.name);
  const current = state.current === r.name;
  const dm = isDM(r);
  const label = roomLabel(r);
  const peerIsAgent = dm && (r.peers || []).some((p) => p.includes('/'));
  const a = h('a', {
    class: `room-link${n ? ' has-unread' : ''}${current ? ' active' : ''}`,
    href: roomHref(r.name),
    dataset: { room: r.name },
    'aria-current': current ? 'page' : null,
  },
  dm ? avatar(label.replace(/^@/, ''), peerIsAgent ? 'agent' : 'user', 'avatar-xs')
    : h('span', { class: 'room-prefix', 'aria-hidden': 'true' }, icon(r.private ? 'lock' : 'hash')),
  h('span', { class: 'room-name' }, dm ? label : r.name),
  r.private && !dm ? h('span', { class: 'sr-only' }, '(private)') : null,
  n ? h('span', { class: `unread-count${mentionCount(r.name) ? ' has-mentions' : ''}`, 'aria-label': `${unreadLabel(r.name)} ${mentionCount(r.name) ? 'mentioning you' : 'unread'}` }, unreadLabel(r.name)) : null);
  a.addEventListener('click', () => setDrawer(false));
  return h('li', null, a);
}

export function renderRooms() {
  const rooms = [...state.rooms.values()];
  const sorted = (xs) => xs.sort((a, b) => roomLabel(a).localeCompare(roomLabel(b)));
  const plain = sorted(rooms.filter((r) => !isDM(r)));
  const dms = sorted(rooms.filter(isDM));
  // Redrawn on every unread change: kept in place, so a click on a room
  // never lands on a link replaced under it.
  const roomKey = (li) => li.firstElementChild?.dataset?.room ?? null;
  morphChildren(document.getElementById('room-list'),
    plain.length ? plain.map(roomItem) : [h('li', { class: 'nav-empty' }, 'No rooms yet — create one or browse.')], roomKey);
  morphChildren(document.getElementById('dm-list'),
    dms.length ? dms.map(roomItem) : [h('li', { class: 'nav-empty' }, 'No direct messages yet.')], roomKey);
  const t = totalUnread();
  const cur = state.current && state.rooms.get(state.current);
  document.title = `${t ? `(${t}) ` : ''}${cur ? roomLabel(cur) + ' — ' : ''}Wheelhouse`;
}
