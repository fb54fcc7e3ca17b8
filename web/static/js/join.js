// join.js — opening a room you are not in: a public room offers Join (its
// topic and size first); a private room, a DM or a name that does not
// exist says so. The page never shows another room in its place.

import { api } from './api.js';
import { h, clear } from './dom.js';
import { state, on } from './store.js';
import { actions } from './actions.js';
import { openBrowse } from './rooms.js';

let showing = null;

// Joined from elsewhere (another tab, or added by someone): open it.
on('rooms', () => { if (showing && state.rooms.has(showing)) actions.go(showing); });

// showJoinOffer fills the empty room view for name (the app has no room open).
export async function showJoinOffer(name) {
  showing = name;
  const box = document.getElementById('room-empty');
  const dm = name.startsWith('dm:');
  document.getElementById('room-title').textContent = dm ? 'Direct message' : '#' + name;
  document.getElementById('room-topic').textContent = '';
  const card = h('div', { class: 'empty-card join-card', dataset: { room: name } },
    h('p', { class: 'empty-title' }, dm ? 'You are not in that DM' : `#${name}`),
    h('p', { class: 'muted' }, h('span', { class: 'spinner', 'aria-hidden': 'true' }), ' Looking for the room…'));
  clear(box).append(card);
  box.hidden = false;
  if (dm) { offerNothing(card, 'A DM is only for the people in it. Start your own from Direct messages.'); return; }
  let room = null;
  try {
    room = (await api.publicRooms()).find((r) => r.name === name) || null;
  } catch (ex) {
    if (showing === name) offerNothing(card, `Could not look it up: ${ex.message}`);
    return;
  }
  if (showing !== name) return;
  if (state.rooms.has(name)) { actions.go(name); return; } // joined meanwhile (another tab)
  if (!room) {
    offerNothing(card, `There is no public room named #${name}. If it is private, ask one of its admins to add you.`);
    return;
  }
  const err = h('p', { class: 'form-error', role: 'alert', hidden: true });
  const join = h('button', { id: 'join-room', type: 'button', class: 'primary-button' }, `Join #${name}`);
  join.addEventListener('click', async () => {
    join.disabled = true;
    try {
      await api.join(name);
      await actions.refreshRooms();
      actions.go(name);
    } catch (ex) {
      err.textContent = ex.message;
      err.hidden = false;
      join.disabled = false;
    }
  });
  document.getElementById('room-topic').textContent = room.topic || 'Public room';
  clear(card).append(
    h('p', { class: 'empty-title' }, `#${name}`),
    room.topic ? h('p', { class: 'join-topic' }, room.topic) : null,
    h('p', { class: 'muted' }, `A public room with ${room.memberCount || 0} member${room.memberCount === 1 ? '' : 's'}. You are not in it yet: join to read and write here.`),
    h('div', { class: 'empty-actions' }, join,
      h('button', { type: 'button', class: 'ghost-button', onclick: () => actions.go(null) }, 'Not now')),
    err);
  join.focus();
}

export function hideJoinOffer() { showing = null; }

function offerNothing(card, text) {
  clear(card).append(
    h('p', { class: 'empty-title' }, card.dataset.room.startsWith('dm:') ? 'You are not in that DM' : `#${card.dataset.room}`),
    h('p', { class: 'muted join-missing' }, text),
    h('div', { class: 'empty-actions' },
      h('button', { type: 'button', class: 'primary-button', onclick: openBrowse }, 'Browse rooms'),
      h('button', { type: 'button', class: 'ghost-button', onclick: () => actions.go(null) }, 'Back')));
}
