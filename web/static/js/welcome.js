// welcome.js — an admin's first screen: what to do so a team can start —
// invite people and pair a bridge (where agents run). Each step shows
// done once it is; the card goes once both are, or when dismissed.

import { api } from './api.js';
import { h, clear } from './dom.js';
import { state, on } from './store.js';
import { openAdmin } from './admin.js';
import { openPairing } from './pairing.js';

let bridges = null; // null: not known

const key = () => `wh.welcome.done.${state.me?.name}`;

export function initWelcome() {
  on('rooms', render);
  on('current', render);
}

// loadWelcome checks what an admin has set up; others see nothing.
export async function loadWelcome() {
  bridges = null;
  if (!state.me?.admin || dismissed()) { render(); return; }
  // both at once: the page's start waits on this
  const [bs, users] = await Promise.all([api.bridges().catch(() => null), api.users().catch(() => null)]);
  bridges = bs ? bs.filter((b) => !b.revoked).length : null;
  if (users) state.users = users; // else keep what we have
  render();
}

function dismissed() {
  try { return localStorage.getItem(key()) === '1'; } catch { return false; }
}

function el() {
  let box = document.getElementById('welcome');
  if (!box) {
    box = h('section', { id: 'welcome', class: 'welcome', 'aria-label': 'Get your team started', hidden: true });
    const view = document.getElementById('room-view');
    view.insertBefore(box, document.getElementById('reconnecting').nextSibling);
  }
  return box;
}

function render() {
  const box = el();
  const people = state.users.length;
  const invited = people > 1;
  const paired = (bridges || 0) > 0;
  if (!state.me?.admin || dismissed() || (invited && paired) || bridges === null) { box.hidden = true; clear(box); return; }
  const step = (done, title, text, label, action, id) => h('li', { class: `welcome-step${done ? ' done' : ''}`, dataset: { step: id } },
    h('span', { class: 'welcome-check', 'aria-hidden': 'true' }, done ? '✓' : ''),
    h('div', { class: 'welcome-text' }, h('strong', null, title), h('span', { class: 'muted' }, text)),
    done ? h('span', { class: 'welcome-done' }, 'done') : h('button', { id, type: 'button', class: 'small-button primary', onclick: action }, label));
  clear(box).append(
    h('div', { class: 'welcome-head' },
      h('p', { class: 'welcome-title' }, 'Get your team started'),
      h('button', { id: 'welcome-dismiss', type: 'button', class: 'link-button', onclick: dismiss }, 'Dismiss')),
    h('ol', { class: 'welcome-steps' },
      step(invited, 'Invite your team', invited ? `${people} people have accounts.` : 'Only you have an account. Add the people you work with.',
        'Add people', () => { openAdmin(); watchDialog('admin-dialog'); }, 'welcome-invite'),
      step(paired, 'Pair a bridge', paired ? 'A bridge is paired: its agents show in the Agents panel.' : 'A bridge runs your agents on your own machine and connects out to this hub.',
        'Pair a bridge', () => { openPairing(); watchDialog('pairing-dialog'); }, 'welcome-pair')));
  box.hidden = false;
}

// After a setup dialog closes, check again what is done.
function watchDialog(id) {
  const d = document.getElementById(id);
  if (d) d.addEventListener('close', () => loadWelcome(), { once: true });
}

function dismiss() {
  try { localStorage.setItem(key(), '1'); } catch { /* the card goes for this page only */ }
  render();
}
