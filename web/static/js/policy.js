// policy.js — the owner's policy form for one agent: who may address it,
// whether busy mentions steer, and how many steers a turn takes.

import { api } from './api.js';
import { h } from './dom.js';
import { setError } from './dialog.js';

const ADDRESS = [
  ['owner', 'Only me', 'Mentions from anyone else are rejected.'],
  ['users', 'Me and these people', 'Name them below.'],
  ['members', 'Any member of a room it is in', ''],
];

export const DEFAULT_POLICY = { address: 'owner', allowed: [], steering: true, maxSteers: 5 };

let seq = 0;

export function policyForm(agent, onSaved) {
  const n = ++seq;
  const p = { ...DEFAULT_POLICY, ...(agent.policy || {}) };
  const radios = ADDRESS.map(([value, label, hint]) => {
    const input = h('input', { type: 'radio', name: `address-${n}`, value, class: 'policy-address', checked: p.address === value });
    return h('label', { class: 'check' }, input, h('span', null, label, hint ? h('small', { class: 'muted block' }, hint) : null));
  });
  const allowed = h('input', {
    class: 'policy-allowed', id: `policy-allowed-${n}`, placeholder: 'alice, bob',
    value: (p.allowed || []).join(', '), autocapitalize: 'none', spellcheck: 'false',
  });
  const allowedRow = h('div', { class: 'field policy-allowed-row' }, h('label', { for: allowed.id }, 'Allowed people'), allowed);
  const steering = h('input', { type: 'checkbox', class: 'policy-steering', checked: !!p.steering });
  const maxSteers = h('input', { type: 'number', min: 0, max: 100, class: 'policy-max-steers', id: `policy-max-${n}`, value: String(p.maxSteers ?? 0) });
  const status = h('p', { class: 'form-status', role: 'status' });
  const err = h('p', { class: 'form-error', role: 'alert', hidden: true });
  const save = h('button', { type: 'submit', class: 'small-button primary policy-save' }, 'Save policy');

  const form = h('form', { class: 'policy-form', 'aria-label': `Policy for @${agent.handle}` },
    h('fieldset', null, h('legend', null, 'Who may address it'), radios),
    allowedRow,
    h('label', { class: 'check' }, steering, h('span', null, 'Steer running turns', h('small', { class: 'muted block' }, 'Off: mentions wait in a queue until the turn ends.'))),
    h('div', { class: 'field field-inline' }, h('label', { for: maxSteers.id }, 'Max steers per turn'), maxSteers, h('small', { class: 'muted' }, '0 = no limit')),
    err,
    h('div', { class: 'form-row' }, save, status));

  const sync = () => {
    const addr = form.querySelector('.policy-address:checked')?.value;
    allowedRow.hidden = addr !== 'users';
    maxSteers.disabled = !steering.checked;
  };
  form.addEventListener('change', sync);
  sync();

  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    setError(err, '');
    status.textContent = 'Saving…';
    const next = {
      ...(agent.policy || {}),
      address: form.querySelector('.policy-address:checked')?.value || 'owner',
      allowed: allowed.value.split(/[\s,]+/).map((s) => s.replace(/^@/, '').trim()).filter(Boolean),
      steering: steering.checked,
      maxSteers: Math.max(0, parseInt(maxSteers.value, 10) || 0),
    };
    save.disabled = true;
    try {
      const d = await api.setPolicy(agent.handle, next);
      agent.policy = (d && (d.policy || (d.agent && d.agent.policy))) || next;
      status.textContent = 'Saved';
      setTimeout(() => { status.textContent = ''; }, 2000);
      if (onSaved) onSaved(agent);
    } catch (ex) {
      status.textContent = '';
      setError(err, ex.message);
    } finally {
      save.disabled = false;
    }
  });

  return h('details', { class: 'policy-details' }, h('summary', null, 'Policy'), form);
}

export function policySummary(p) {
  if (!p) return '';
  const who = p.address === 'members' ? 'room members' : p.address === 'users' ? `you + ${(p.allowed || []).map((a) => '@' + a).join(', ') || 'nobody else'}` : 'only you';
  const steer = p.steering ? `steers on${p.maxSteers ? ` (max ${p.maxSteers}/turn)` : ''}` : 'steers off (queue)';
  return `Addressable by ${who} · ${steer}`;
}
