// tokens.js — API tokens for scripts: create one with a label, see it once
// with a copy button and an example curl line.

import { api } from './api.js';
import { h, clear, copyButton } from './dom.js';
import { openDialog, field, errorLine, setError, busy } from './dialog.js';

export function openTokens() {
  const label = h('input', {
    id: 'token-label', required: true, maxlength: 64, autocomplete: 'off', spellcheck: 'false',
    placeholder: 'e.g. ci-script',
  });
  const err = errorLine('token-error');
  const result = h('div', { id: 'token-result', class: 'stack' });
  const form = h('form', { class: 'stack' },
    h('p', null, 'A token lets a script use the API as you: send it as ',
      h('code', null, 'Authorization: Bearer <token>'), '. It has all your rights, so keep it like a password.'),
    field('Label', label, 'What the token is for, so you recognise it later.'),
    err,
    h('div', { class: 'dialog-actions' }, h('button', { id: 'token-create', type: 'submit', class: 'primary-button' }, 'Create token')),
    result);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    setError(err, '');
    clear(result);
    await busy(form, async () => {
      try {
        const d = await api.createToken(label.value.trim());
        result.append(tokenNotice(d.token, d.label || label.value.trim()));
        label.value = '';
      } catch (ex) {
        setError(err, ex.missing ? 'API tokens are not available on this hub.' : ex.message);
      }
    });
  });
  openDialog({ id: 'tokens-dialog', title: 'API tokens', body: form });
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
