// auth.js — first-start setup and login screens.

import { api } from './api.js';
import { h, clear } from './dom.js';
import { field, errorLine, setError, busy } from './dialog.js';

const screen = () => document.getElementById('auth-screen');

function card(title, lead, form) {
  return h('div', { class: 'auth-card' },
    h('div', { class: 'auth-brand' }, h('img', { src: '/favicon.svg', alt: '', width: 40, height: 40 }), h('span', null, 'Wheelhouse')),
    h('h1', null, title),
    h('p', { class: 'auth-lead' }, lead),
    form);
}

export function showLogin(onDone, notice = '') {
  const name = h('input', { id: 'login-name', name: 'username', autocomplete: 'username', required: true, autocapitalize: 'none', spellcheck: 'false' });
  const pass = h('input', { id: 'login-password', name: 'password', type: 'password', autocomplete: 'current-password', required: true });
  const err = errorLine('login-error');
  const form = h('form', { class: 'auth-form', id: 'login-form' },
    notice ? h('p', { class: 'form-notice', role: 'status' }, notice) : null,
    field('Name', name),
    field('Password', pass),
    err,
    h('button', { id: 'login-submit', type: 'submit', class: 'primary-button wide' }, 'Log in'));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    setError(err, '');
    await busy(form, async () => {
      try {
        const d = await api.login(name.value.trim().replace(/^@/, ''), pass.value);
        onDone(d.user);
      } catch (ex) {
        setError(err, ex.status === 401 ? 'That name and password do not match.' : ex.message);
        pass.select();
      }
    });
  });
  mount(card('Log in', 'Your team’s rooms and agents.', form));
  name.focus();
}

export function showSetup(onDone) {
  const token = h('input', { id: 'setup-token', autocomplete: 'off', required: true, spellcheck: 'false' });
  const name = h('input', { id: 'setup-name', autocomplete: 'username', required: true, value: 'admin', autocapitalize: 'none', spellcheck: 'false' });
  const pass = h('input', { id: 'setup-password', type: 'password', autocomplete: 'new-password', required: true, minlength: 8 });
  const err = errorLine('setup-error');
  const form = h('form', { class: 'auth-form', id: 'setup-form' },
    field('Setup token', token, 'The one-time token the hub printed when it started.'),
    field('Admin name', name),
    field('Password', pass, 'At least 8 characters.'),
    err,
    h('button', { id: 'setup-submit', type: 'submit', class: 'primary-button wide' }, 'Create admin and log in'));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    setError(err, '');
    await busy(form, async () => {
      try {
        const d = await api.setup(token.value.trim(), name.value.trim(), pass.value);
        onDone(d.user);
      } catch (ex) {
        if (ex.status === 409) { showLogin(onDone, 'Setup is already done. Log in instead.'); return; }
        setError(err, ex.message);
      }
    });
  });
  mount(card('Set up Wheelhouse', 'Create the first admin account for this hub.', form));
  token.focus();
}

// showReset: the page behind a reset link (#reset=CODE) an admin handed
// over: choose a new password, and you are logged in.
export function showReset(code, onDone, onCancel) {
  const pass = h('input', { id: 'reset-password', type: 'password', autocomplete: 'new-password', required: true, minlength: 8 });
  const again = h('input', { id: 'reset-repeat', type: 'password', autocomplete: 'new-password', required: true, minlength: 8 });
  const err = errorLine('reset-error');
  const form = h('form', { class: 'auth-form', id: 'reset-form' },
    field('New password', pass, 'At least 8 characters. Every session and API token of your account ends.'),
    field('New password again', again),
    err,
    h('button', { id: 'reset-submit', type: 'submit', class: 'primary-button wide' }, 'Set password and log in'),
    h('button', { id: 'reset-cancel', type: 'button', class: 'ghost-button wide', onclick: onCancel }, 'Back to log in'));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    setError(err, '');
    if (pass.value !== again.value) { setError(err, 'The passwords do not match.'); again.select(); return; }
    await busy(form, async () => {
      try {
        const d = await api.redeemReset(code, pass.value);
        onDone(d.user);
      } catch (ex) {
        setError(err, ex.message);
      }
    });
  });
  mount(card('Choose a new password', 'An admin gave you this link to set your password.', form));
  pass.focus();
}

function mount(node) {
  const s = screen();
  clear(s).append(node);
  s.hidden = false;
  document.getElementById('app-screen').hidden = true;
  document.getElementById('boot').hidden = true;
  document.title = 'Wheelhouse';
}

export function hideAuth() {
  clear(screen());
  screen().hidden = true;
}
