// admin.js — admins add people (opened from the People dialog).

import { api } from './api.js';
import { h, clear, copyButton } from './dom.js';
import { openDialog, field, errorLine, setError, busy } from './dialog.js';
import { state } from './store.js';

function randomPassword() {
  const bytes = crypto.getRandomValues(new Uint8Array(12));
  return Array.from(bytes, (b) => 'abcdefghjkmnpqrstuvwxyz23456789'[b % 31]).join('');
}

export function openAdmin({ onClose } = {}) {
  const name = h('input', { id: 'new-user-name', required: true, autocapitalize: 'none', spellcheck: 'false', maxlength: 32, placeholder: 'e.g. alice' });
  const display = h('input', { id: 'new-user-display', maxlength: 64, placeholder: 'Alice Example' });
  const pass = h('input', { id: 'new-user-password', required: true, minlength: 8, autocomplete: 'new-password' });
  const gen = h('button', { type: 'button', class: 'small-button', onclick: () => { pass.value = randomPassword(); } }, 'Generate');
  const admin = h('input', { id: 'new-user-admin', type: 'checkbox' });
  const err = errorLine('new-user-error');
  const result = h('div', { id: 'new-user-result', class: 'stack' });
  const form = h('form', { class: 'stack' },
    field('Name', name, 'Used for @mentions and logging in.'),
    field('Display name (optional)', display),
    h('div', { class: 'field' }, h('label', { for: pass.id }, 'Password'), h('div', { class: 'inline-form' }, pass, gen), h('p', { class: 'field-hint' }, 'At least 8 characters. Share it with them privately.')),
    h('label', { class: 'check' }, admin, h('span', null, 'Hub admin (can add people)')),
    err,
    h('div', { class: 'dialog-actions' }, h('button', { id: 'new-user-submit', type: 'submit', class: 'primary-button' }, 'Add user')),
    result);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    setError(err, '');
    clear(result);
    await busy(form, async () => {
      try {
        const d = await api.createUser({ name: name.value.trim(), password: pass.value, display: display.value.trim() || undefined, admin: admin.checked });
        const u = d.user;
        state.users = await api.users().catch(() => [...state.users, u]);
        const creds = `${location.origin}\nname: ${u.name}\npassword: ${pass.value}`;
        result.append(h('div', { class: 'notice notice-ok', role: 'status' },
          h('p', null, `Added @${u.name}. Send them these details:`),
          h('pre', null, creds),
          copyButton(creds, 'Copy details')));
        name.value = ''; display.value = ''; pass.value = ''; admin.checked = false;
      } catch (ex) { setError(err, ex.message); }
    });
  });
  openDialog({ id: 'admin-dialog', title: 'Add a user', body: form, onClose });
}
