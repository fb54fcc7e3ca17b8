// edit.js — editing and deleting your own messages (room admins delete
// any). An edit shows "(edited)"; a deletion leaves a tombstone. Neither
// re-steers an agent nor takes back what it was sent.

import { api } from './api.js';
import { h, toast } from './dom.js';
import { on, findMessage } from './store.js';
import { confirmDialog } from './dialog.js';
import { storeMessage } from './chatevents.js';

export function initEdit() {
  on('act', ({ action, message, target }) => {
    if (action === 'edit') startEdit(message, target.closest('.message'));
    else if (action === 'delete') remove(message);
  });
}

function startEdit(m, node) {
  const body = node && node.querySelector('.message-body');
  if (!body || node.querySelector('.edit-form')) return;
  const cur = findMessage(m.id, m.room) || m;
  const ta = h('textarea', { class: 'edit-text', rows: Math.min(12, String(cur.text || '').split('\n').length + 1), 'aria-label': 'Edit your message' });
  ta.value = cur.text || '';
  const err = h('p', { class: 'form-error', role: 'alert', hidden: true });
  const save = h('button', { type: 'submit', class: 'small-button primary edit-save' }, 'Save');
  const cancel = h('button', { type: 'button', class: 'small-button edit-cancel' }, 'Cancel');
  const form = h('form', { class: 'edit-form' }, ta,
    h('div', { class: 'edit-actions' }, h('span', { class: 'muted' }, 'Enter saves · Esc cancels · an agent keeps what it was sent'), cancel, save), err);
  body.hidden = true;
  body.after(form);
  // The form may have moved to a fresh node of the message (carryEdit):
  // its body is the one beside it now.
  const done = () => {
    const b = form.parentElement && form.parentElement.querySelector('.message-body');
    form.remove();
    if (b) b.hidden = false;
  };
  cancel.addEventListener('click', done);
  ta.addEventListener('keydown', (e) => {
    if (e.key === 'Escape') { e.preventDefault(); e.stopPropagation(); done(); }
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) { e.preventDefault(); form.requestSubmit(); }
  });
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const text = ta.value;
    if (text === cur.text) { done(); return; }
    if (!text.trim() && !(cur.files || []).length) { err.textContent = 'A message needs text; delete it instead.'; err.hidden = false; return; }
    save.disabled = true;
    try {
      const fresh = await api.editMessage(m.room, m.id, text);
      done();
      storeMessage({ ...cur, ...fresh, room: fresh.room || m.room });
    } catch (ex) {
      err.textContent = ex.message;
      err.hidden = false;
      save.disabled = false;
    }
  });
  ta.focus();
  ta.setSelectionRange(ta.value.length, ta.value.length);
}

// carryEdit moves an open edit form from a message's node to the fresh
// node that replaces it (a reaction, a reply count or another's edit
// redrew the message): what the person is typing stays.
export function carryEdit(node, fresh) {
  const form = node.querySelector('.edit-form');
  const body = fresh.querySelector('.message-body');
  if (!form || !body) return;
  body.hidden = true;
  body.after(form);
}

async function remove(m) {
  const own = m.authorKind === 'user';
  if (!(await confirmDialog(own ? 'Delete this message?' : `Delete @${m.author}'s message?`, 'Delete'))) return;
  try {
    await api.deleteMessage(m.room, m.id);
    const cur = findMessage(m.id, m.room) || m;
    storeMessage({ ...cur, deleted: true, text: '', files: [], reactions: [], mentions: [] });
  } catch (ex) {
    toast(`Could not delete the message: ${ex.message}`, 'error');
  }
}
