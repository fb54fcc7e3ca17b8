// account.js — your own account: change your password (the current one is
// asked for; your other sessions end) and see the browsers you are logged
// in from, ending any of them.

import { api } from './api.js';
import { h, clear, fmtFull, toast } from './dom.js';
import { openDialog, field, errorLine, setError, busy, confirmDialog } from './dialog.js';

export function openAccount() {
  const current = h('input', { id: 'pw-current', type: 'password', autocomplete: 'current-password', required: true });
  const next = h('input', { id: 'pw-new', type: 'password', autocomplete: 'new-password', required: true, minlength: 8 });
  const again = h('input', { id: 'pw-repeat', type: 'password', autocomplete: 'new-password', required: true, minlength: 8 });
  const err = errorLine('pw-error');
  const done = h('p', { id: 'pw-result', class: 'form-status', role: 'status' });
  const list = h('ul', { id: 'session-list', class: 'bridge-list', 'aria-label': 'Your sessions' });
  const note = h('p', { id: 'sessions-note', class: 'form-status', role: 'status' });
  const load = async () => {
    try {
      renderSessions(list, await api.sessions(), load);
      note.textContent = '';
    } catch (ex) {
      note.textContent = `Could not load your sessions: ${ex.message}`;
    }
  };
  const form = h('form', { id: 'password-form', class: 'stack' },
    h('h3', { class: 'subhead' }, 'Change your password'),
    field('Current password', current),
    field('New password', next, 'At least 8 characters. Your other sessions end; this one stays, and so do your API tokens.'),
    field('New password again', again),
    err,
    h('div', { class: 'dialog-actions' }, h('button', { id: 'pw-submit', type: 'submit', class: 'primary-button' }, 'Change password')),
    done);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    setError(err, '');
    done.textContent = '';
    if (next.value !== again.value) { setError(err, 'The new passwords do not match.'); again.select(); return; }
    await busy(form, async () => {
      try {
        await api.changePassword(current.value, next.value);
        current.value = ''; next.value = ''; again.value = '';
        done.textContent = 'Password changed. Your other sessions have ended.';
        await load();
      } catch (ex) {
        setError(err, ex.message);
      }
    });
  });
  const body = h('div', { class: 'stack account' }, form,
    h('h3', { class: 'subhead' }, 'Where you are logged in'), list, note);
  openDialog({ id: 'account-dialog', title: 'Account', body });
  load();
}

function renderSessions(list, sessions, reload) {
  clear(list);
  sessions.sort((a, b) => Number(!!b.current) - Number(!!a.current));
  for (const s of sessions) {
    const li = h('li', { class: 'bridge-row session-row', dataset: { id: s.id, current: String(!!s.current) } },
      h('div', { class: 'pick-main' },
        h('span', { class: 'pick-title session-client' }, describeClient(s.client)),
        h('span', { class: 'pick-sub' }, `since ${fmtFull(s.createdAt)}`, s.addr ? ` · from ${s.addr}` : '')),
      s.current ? h('span', { class: 'bridge-status session-current' }, 'this browser') : null);
    if (!s.current) {
      const end = h('button', { type: 'button', class: 'small-button danger end-session' }, 'Log out');
      end.addEventListener('click', async () => {
        if (!(await confirmDialog(`Log out ${describeClient(s.client)} (since ${fmtFull(s.createdAt)})?`, 'Log out'))) return;
        end.disabled = true;
        try {
          await api.endSession(s.id);
          toast('That session has ended');
        } catch (ex) {
          toast(ex.message, 'error');
        }
        await reload();
      });
      li.append(end);
    }
    list.append(li);
  }
}

// describeClient turns a User-Agent into "Firefox on Linux" (or the raw
// string's start when it is none of the usual ones).
export function describeClient(ua) {
  if (!ua) return 'Unknown client';
  const browser = [['Edg/', 'Edge'], ['Firefox/', 'Firefox'], ['Chrome/', 'Chrome'], ['Safari/', 'Safari'], ['curl/', 'curl']]
    .find(([k]) => ua.includes(k));
  const os = [['Android', 'Android'], ['iPhone', 'iOS'], ['iPad', 'iPadOS'], ['Windows', 'Windows'], ['Mac OS', 'macOS'], ['Linux', 'Linux']]
    .find(([k]) => ua.includes(k));
  if (!browser) return ua.slice(0, 60);
  return os ? `${browser[1]} on ${os[1]}` : browser[1];
}
