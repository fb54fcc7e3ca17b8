// tokens.js — API tokens for scripts: create one with a label, see it once
// with a copy button and an example curl line.

import { api } from './api.js';
import { h, clear, copyButton, fmtFull, toast } from './dom.js';
import { openDialog, field, errorLine, setError, busy, confirmDialog } from './dialog.js';

export function openTokens() {
  const label = h('input', {
    id: 'token-label', required: true, maxlength: 64, autocomplete: 'off', spellcheck: 'false',
    placeholder: 'e.g. ci-script',
  });
  const err = errorLine('token-error');
  const result = h('div', { id: 'token-result', class: 'stack' });
  const list = h('ul', { id: 'token-list', class: 'bridge-list', 'aria-label': 'Your tokens' });
  const note = h('p', { class: 'form-status', id: 'tokens-note', role: 'status' });
  const load = async () => {
    try {
      renderTokens(list, note, await api.tokens(), load);
    } catch (ex) {
      clear(list);
      note.textContent = ex.missing ? '' : `Could not load your tokens: ${ex.message}`;
    }
  };
  const form = h('form', { class: 'stack' },
    h('p', null, 'A token lets a script use the API as you: send it as ',
      h('code', null, 'Authorization: Bearer <token>'), '. It has all your rights, so keep it like a password.'),
    field('Label', label, 'What the token is for, so you recognise it later.'),
    err,
    h('div', { class: 'dialog-actions' }, h('button', { id: 'token-create', type: 'submit', class: 'primary-button' }, 'Create token')),
    result,
    h('h3', { class: 'subhead' }, 'Your tokens'), list, note);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    setError(err, '');
    clear(result);
    await busy(form, async () => {
      try {
        const d = await api.createToken(label.value.trim());
        result.append(tokenNotice(d.token, d.label || label.value.trim()));
        label.value = '';
        await load();
      } catch (ex) {
        setError(err, ex.missing ? 'API tokens are not available on this hub.' : ex.message);
      }
    });
  });
  openDialog({ id: 'tokens-dialog', title: 'API tokens', body: form });
  load();
}

// renderTokens lists the caller's tokens (never the secrets) with Revoke.
function renderTokens(list, note, tokens, reload) {
  clear(list);
  note.textContent = tokens.length ? '' : 'No tokens yet.';
  for (const t of tokens) {
    const li = h('li', { class: 'bridge-row token-row', dataset: { id: t.id, revoked: String(!!t.revoked) } },
      h('div', { class: 'pick-main' },
        h('span', { class: 'pick-title' }, t.label || '(no label)'),
        h('span', { class: 'pick-sub' }, `created ${fmtFull(t.createdAt)} · `, h('code', null, t.id))),
      h('span', { class: 'bridge-status', dataset: { revoked: String(!!t.revoked) } }, t.revoked ? 'revoked' : 'active'));
    if (!t.revoked) {
      const revoke = h('button', { type: 'button', class: 'small-button danger revoke-token' }, 'Revoke');
      revoke.addEventListener('click', async () => {
        if (!(await confirmDialog(`Revoke the token “${t.label || t.id}”? Scripts using it stop working at once.`, 'Revoke'))) return;
        revoke.disabled = true;
        try {
          await api.revokeToken(t.id);
          toast(`Revoked the token “${t.label || t.id}”`);
        } catch (ex) {
          toast(ex.message, 'error');
        }
        await reload();
      });
      li.append(revoke);
    }
    list.append(li);
  }
}

function tokenNotice(token, label) {
  const curl = `curl -H "Authorization: Bearer ${token}" ${location.origin}/api/v1/me`;
  const copy = copyButton(token, 'Copy token');
  copy.id = 'token-copy';
  const copyCurl = copyButton(curl, 'Copy command');
  copyCurl.id = 'token-curl-copy';
  return h('div', { class: 'notice notice-ok token-notice', role: 'status' },
    h('p', null, h('strong', null, `Token “${label}” created.`)),
    h('p', { id: 'token-once', class: 'token-once' },
      'It is shown only once: copy it now. The hub keeps only a hash and cannot show it again.'),
    h('div', { class: 'command-box' }, h('pre', { id: 'token-value', tabindex: '0' }, token), copy),
    h('p', null, 'Try it:'),
    h('div', { class: 'command-box' }, h('pre', { id: 'token-curl', tabindex: '0' }, curl), copyCurl));
}
