// render/actions.js — the small toolbar on a message (on hover or focus;
// always on touch screens): react, reply in a thread, edit and delete your
// own (room admins delete any). Only on a hub that has these features.

import { h } from '../dom.js';
import { state, emit } from '../store.js';

export const QUICK = ['👍', '✅', '👀', '🎉', '❤️', '😄'];

export function actionsEl(m, { inThread = false } = {}) {
  if (!Array.isArray(m.reactions) || m.deleted || m.authorKind === 'system' || m.partial) return null;
  const me = state.me?.name;
  const mine = m.authorKind === 'user' && m.author === me;
  const admin = state.rooms.get(m.room)?.role === 'admin';
  const act = (action) => (e) => { e.stopPropagation(); emit('act', { action, message: m, target: e.currentTarget }); };
  return h('div', { class: 'message-actions', role: 'toolbar', 'aria-label': 'Message actions' },
    h('button', { type: 'button', class: 'msg-action react', title: 'Add a reaction', 'aria-label': 'Add a reaction', onclick: act('react') }, 'React'),
    !inThread && !m.thread ? h('button', { type: 'button', class: 'msg-action reply-thread', title: 'Reply in a thread', 'aria-label': 'Reply in a thread', onclick: act('reply') }, 'Reply') : null,
    mine ? h('button', { type: 'button', class: 'msg-action edit-message', title: 'Edit', 'aria-label': 'Edit your message', onclick: act('edit') }, 'Edit') : null,
    mine || admin ? h('button', { type: 'button', class: 'msg-action delete-message', title: 'Delete', 'aria-label': 'Delete the message', onclick: act('delete') }, 'Delete') : null);
}
