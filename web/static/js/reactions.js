// reactions.js — adding and taking back reactions: the picker (a few
// quick ones, or any short text such as :shipit:) and the click on a
// reaction. The hub sends everyone the message's reactions as they are.

import { api } from './api.js';
import { h, toast } from './dom.js';
import { state, on, findMessage, emit } from './store.js';
import { QUICK } from './render/actions.js';

let picker = null;

export function initReactions() {
  on('react', ({ message, emoji, on: add }) => react(message, emoji, add));
  on('act', ({ action, message, target }) => { if (action === 'react') openPicker(message, target); });
  document.addEventListener('click', (e) => { if (picker && !picker.contains(e.target) && !e.target.closest('.msg-action.react')) closePicker(); });
  document.addEventListener('keydown', (e) => { if (e.key === 'Escape' && picker) closePicker(); });
}

async function react(message, emoji, add) {
  try {
    const d = await api.react(message.room, message.id, emoji, add);
    const m = findMessage(message.id, message.room);
    if (d && Array.isArray(d.reactions)) {
      if (m) m.reactions = d.reactions;
      emit('reactions', { room: message.room, messageId: message.id, thread: message.thread || 0, reactions: d.reactions });
    }
  } catch (ex) {
    toast(`Could not ${add ? 'add' : 'take back'} the reaction: ${ex.message}`, 'error');
  }
}

function openPicker(message, anchor) {
  closePicker();
  const custom = h('input', { id: 'reaction-custom', type: 'text', maxlength: 16, placeholder: 'or type one, e.g. :shipit:', 'aria-label': 'A reaction of your own' });
  picker = h('div', { id: 'reaction-picker', class: 'reaction-picker', role: 'dialog', 'aria-label': 'Add a reaction' },
    QUICK.map((e) => h('button', { type: 'button', class: 'quick-reaction', dataset: { emoji: e }, 'aria-label': `React with ${e}`, onclick: () => { closePicker(); react(message, e, !mine(message, e)); } }, e)),
    custom);
  custom.addEventListener('keydown', (e) => {
    if (e.key !== 'Enter') return;
    e.preventDefault();
    const v = custom.value.trim();
    if (v) { closePicker(); react(message, v, true); }
  });
  document.body.append(picker);
  const r = anchor.getBoundingClientRect();
  const w = picker.offsetWidth;
  const hgt = picker.offsetHeight;
  picker.style.left = `${Math.max(8, Math.min(r.right - w, innerWidth - w - 8))}px`;
  picker.style.top = `${r.bottom + 6 + hgt > innerHeight ? Math.max(8, r.top - hgt - 6) : r.bottom + 6}px`;
  picker.querySelector('button').focus();
}

function mine(message, emoji) {
  const m = findMessage(message.id, message.room) || message;
  return (m.reactions || []).some((r) => r.emoji === emoji && (r.users || []).includes(state.me?.name));
}

function closePicker() {
  if (picker) { picker.remove(); picker = null; }
}
