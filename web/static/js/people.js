// people.js — admins manage people: who is an admin, who is deactivated,
// and one-time password reset links. The hub decides (the last admin stays
// one; nobody deactivates themselves) and its reason shows inline.

import { api } from './api.js';
import { h, clear, avatar, copyButton, fmtFull, toast } from './dom.js';
import { openDialog, errorLine, setError, confirmDialog } from './dialog.js';
import { state } from './store.js';
import { openAdmin } from './admin.js';

export function openPeople() {
  const list = h('ul', { id: 'people-list', class: 'pick-list', 'aria-label': 'People' }, h('li', { class: 'muted' }, 'Loading…'));
  const err = errorLine('people-error');
  const result = h('div', { id: 'reset-result', class: 'stack' });
  const add = h('button', { id: 'people-add', type: 'button', class: 'primary-button' }, 'Add a user…');
  const load = async () => {
    try {
      state.users = await api.users();
      render(list, err, result, load);
    } catch (ex) {
      setError(err, `Could not load people: ${ex.message}`);
    }
  };
  add.addEventListener('click', () => openAdmin({ onClose: load }));
  const body = h('div', { class: 'stack people' },
    h('div', { class: 'toolbar people-head' },
      h('span', { class: 'muted' }, 'Deactivated people cannot log in; their sessions, tokens and bridges have ended.'),
      add),
    err, result, list);
  openDialog({ id: 'people-dialog', title: 'People', body, wide: true });
  load();
}

function render(list, err, result, reload) {
  clear(list);
  for (const u of state.users) list.append(row(u, err, result, reload));
}

function row(u, err, result, reload) {
  const me = u.name === state.me.name;
  const gone = !!u.deactivated;
  const status = gone ? 'deactivated' : 'active';
  const act = async (what, fn) => {
    setError(err, '');
    try {
      await fn();
      toast(what);
    } catch (ex) {
      setError(err, ex.message);
    }
    await reload();
  };
  const li = h('li', { class: 'pick-row person-row', dataset: { name: u.name, admin: String(!!u.admin), deactivated: String(gone) } },
    avatar(u.name, 'user', 'avatar-sm'),
    h('div', { class: 'pick-main' },
      h('span', { class: 'pick-title person-name' }, '@' + u.name, me ? ' (you)' : ''),
      h('span', { class: 'pick-sub' }, [u.display, u.admin ? 'hub admin' : 'member'].filter(Boolean).join(' · '))),
    h('span', { class: 'person-status', dataset: { deactivated: String(gone) } }, status));
  const actions = h('div', { class: 'person-actions' });
  if (!gone) {
    actions.append(h('button', {
      type: 'button', class: 'small-button toggle-admin',
      onclick: () => act(u.admin ? `@${u.name} is no longer an admin` : `@${u.name} is now an admin`,
        () => api.updateUser(u.name, { admin: !u.admin })),
    }, u.admin ? 'Remove admin' : 'Make admin'));
  }
  if (!gone && !me) {
    actions.append(h('button', {
      type: 'button', class: 'small-button reset-password',
      onclick: async () => {
        if (!(await confirmDialog(`Make a password reset link for @${u.name}? Whoever opens it sets a new password; all of @${u.name}'s sessions and tokens end then.`, 'Make link', false))) return;
        setError(err, '');
        clear(result);
        try {
          const d = await api.resetPassword(u.name);
          result.append(resetNotice(u.name, d.code, d.expiresAt));
        } catch (ex) {
          setError(err, ex.message);
        }
      },
    }, 'Reset password'));
    actions.append(h('button', {
      type: 'button', class: 'small-button danger deactivate',
      onclick: async () => {
        if (!(await confirmDialog(`Deactivate @${u.name}? They are logged out everywhere, their API tokens stop working, and their bridges are revoked (their agents go offline). You can reactivate the account; they pair their machines again.`, 'Deactivate'))) return;
        act(`Deactivated @${u.name}`, () => api.updateUser(u.name, { active: false }));
      },
    }, 'Deactivate'));
  }
  if (gone) {
    actions.append(h('button', {
      type: 'button', class: 'small-button reactivate',
      onclick: () => act(`Reactivated @${u.name}`, () => api.updateUser(u.name, { active: true })),
    }, 'Reactivate'));
  }
  li.append(actions);
  return li;
}

// resetNotice shows the one-time link to hand over (once: the hub keeps
// only its hash).
function resetNotice(name, code, expiresAt) {
  const link = `${location.origin}/#reset=${code}`;
  const copy = copyButton(link, 'Copy link');
  copy.id = 'reset-copy';
  return h('div', { class: 'notice notice-ok', role: 'status', dataset: { user: name } },
    h('p', null, h('strong', null, `Reset link for @${name}`), ` — works once, until ${fmtFull(expiresAt)}. Send it to them privately; it is shown only now.`),
    h('div', { class: 'command-box' }, h('pre', { id: 'reset-link', tabindex: '0' }, link), copy));
}
