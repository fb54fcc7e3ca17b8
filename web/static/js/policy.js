// policy.js — the owner's policy form for one agent: who may address it,
// whether busy mentions steer and how often, what happens to a steer for a
// turn that ended, how long queued messages and approvals wait, and which
// tools the bridge approves by itself. The hub validates; its message shows
// inline.

import { api } from './api.js';
import { h } from './dom.js';
import { setError } from './dialog.js';
import { state } from './store.js';
import { signIfEnrolled } from './signing.js';
import { enrollPrompt } from './devices.js';

const ADDRESS = [
  ['owner', 'Only me', 'Mentions from anyone else are rejected.'],
  ['users', 'Me and these people', 'Name them below.'],
  ['moderate', 'Me and these people; others ask me first', 'Anyone else’s mention comes to your inbox; you forward it or decline it.'],
  ['members', 'Any member of a room it is in', ''],
];

export const DEFAULT_POLICY = {
  address: 'owner', allowed: [], steering: true, maxSteers: 5,
  grace: '5s', startOnEnded: true, maxAge: '10m0s', approvalTimeout: '5m0s', autoApprove: [],
};

let seq = 0;

const list = (text) => text.split(/[\s,]+/).map((s) => s.replace(/^@/, '').trim()).filter(Boolean);

// policyForm(agent, onSaved(policy)) → a <details> with the form.
export function policyForm(agent, onSaved) {
  const n = ++seq;
  const p = { ...DEFAULT_POLICY, ...(agent.policy || {}) };
  const id = (name) => `policy-${name}-${n}`;
  const hint = (text) => h('small', { class: 'muted block' }, text);
  const radios = ADDRESS.map(([value, label, tip]) => {
    const input = h('input', { type: 'radio', name: `address-${n}`, value, class: 'policy-address', checked: p.address === value });
    return h('label', { class: 'check' }, input, h('span', null, label, tip ? hint(tip) : null));
  });
  const text = (cls, name, value, placeholder) => h('input', {
    class: cls, id: id(name), value: value || '', placeholder, autocapitalize: 'none', spellcheck: 'false', autocomplete: 'off',
  });
  const allowed = text('policy-allowed', 'allowed', (p.allowed || []).join(', '), 'alice, bob');
  const allowedRow = h('div', { class: 'field policy-allowed-row' }, h('label', { for: allowed.id }, 'Allowed people'), allowed);
  const steering = h('input', { type: 'checkbox', class: 'policy-steering', checked: !!p.steering });
  const maxSteers = h('input', { type: 'number', min: 0, max: 1000, class: 'policy-max-steers', id: id('max'), value: String(p.maxSteers ?? 0) });
  const grace = text('policy-grace duration-input', 'grace', p.grace, DEFAULT_POLICY.grace);
  const startOnEnded = h('input', { type: 'checkbox', class: 'policy-start-on-ended', checked: !!p.startOnEnded });
  const maxAge = text('policy-max-age duration-input', 'max-age', p.maxAge, DEFAULT_POLICY.maxAge);
  const approvalTimeout = text('policy-approval-timeout duration-input', 'approval-timeout', p.approvalTimeout, DEFAULT_POLICY.approvalTimeout);
  const autoApprove = text('policy-auto-approve', 'auto-approve', (p.autoApprove || []).join(', '), 'e.g. read_file, list_dir');
  const status = h('p', { class: 'form-status', role: 'status' });
  const err = h('p', { class: 'form-error policy-error', role: 'alert', hidden: true });
  const prompt = h('div', { class: 'policy-prompt' });
  const save = h('button', { type: 'submit', class: 'small-button primary policy-save' }, 'Save policy');
  const duration = (input, label, tip) => h('div', { class: 'field' },
    h('div', { class: 'field-inline' }, h('label', { for: input.id }, label), input), hint(tip));

  const form = h('form', { class: 'policy-form', 'aria-label': `Policy for @${agent.handle}` },
    h('fieldset', null, h('legend', null, 'Who may address it'), radios),
    allowedRow,
    h('label', { class: 'check' }, steering, h('span', null, 'Steer running turns', hint('Off: mentions wait in a queue until the turn ends.'))),
    h('div', { class: 'field field-inline' }, h('label', { for: maxSteers.id }, 'Max steers per turn'), maxSteers, h('small', { class: 'muted' }, '0 = no limit')),
    h('label', { class: 'check' }, startOnEnded, h('span', null, 'Start a new turn for an ended turn',
      hint('A steer meant for a turn that has ended starts a new turn instead of being rejected.'))),
    duration(grace, 'Grace', 'How long after a turn ends a steer for it may still start a new turn (0s = no limit).'),
    duration(maxAge, 'Max age of queued messages', 'Queued follow-ups expire after this, e.g. 10m.'),
    duration(approvalTimeout, 'Approval timeout', 'An approval you have not decided is denied after this, e.g. 5m.'),
    h('div', { class: 'field' }, h('label', { for: autoApprove.id }, 'Auto-approve tools'), autoApprove,
      h('p', { class: 'field-hint policy-auto-approve-note' }, 'Comma-separated tool names the bridge approves by itself. Never applies to turns steered by anyone but you.')),
    err,
    prompt,
    h('div', { class: 'form-row' }, save, status));

  const sync = () => {
    const addr = form.querySelector('.policy-address:checked')?.value;
    allowedRow.hidden = addr !== 'users' && addr !== 'moderate';
    maxSteers.disabled = !steering.checked;
    grace.disabled = !startOnEnded.checked;
  };
  form.addEventListener('change', sync);
  sync();

  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    setError(err, '');
    status.textContent = 'Saving…';
    // PATCH replaces the whole policy: send every field. An empty duration
    // means its default.
    const dur = (input, def) => input.value.trim() || def;
    const next = {
      address: form.querySelector('.policy-address:checked')?.value || 'owner',
      allowed: list(allowed.value),
      steering: steering.checked,
      maxSteers: Math.max(0, parseInt(maxSteers.value, 10) || 0),
      grace: dur(grace, DEFAULT_POLICY.grace),
      startOnEnded: startOnEnded.checked,
      maxAge: dur(maxAge, DEFAULT_POLICY.maxAge),
      approvalTimeout: dur(approvalTimeout, DEFAULT_POLICY.approvalTimeout),
      autoApprove: list(autoApprove.value),
    };
    save.disabled = true;
    prompt.replaceChildren();
    try {
      // Signed by this browser's device: the bridge takes a policy that
      // lets the agent do more only with it (and never beyond its config).
      const signed = await signIfEnrolled(state.me.name, { kind: 'policy', agent: agent.handle, policy: next });
      const d = await api.setPolicy(agent.handle, next, signed);
      agent.policy = (d && (d.policy || (d.agent && d.agent.policy))) || next;
      // Show what the hub stored (it normalises durations: 10m → 10m0s).
      grace.value = agent.policy.grace ?? next.grace;
      maxAge.value = agent.policy.maxAge ?? next.maxAge;
      approvalTimeout.value = agent.policy.approvalTimeout ?? next.approvalTimeout;
      status.textContent = 'Saved';
      setTimeout(() => { status.textContent = ''; }, 2000);
      if (onSaved) onSaved(agent.policy);
    } catch (ex) {
      status.textContent = '';
      setError(err, ex.message);
      if (ex.reason === 'signature-required') prompt.replaceChildren(enrollPrompt('A policy that lets the agent do more'));
    } finally {
      save.disabled = false;
    }
  });

  return h('details', { class: 'policy-details' }, h('summary', null, 'Policy'), form);
}

export function policySummary(p) {
  if (!p) return '';
  const people = `you + ${(p.allowed || []).map((a) => '@' + a).join(', ') || 'nobody else'}`;
  const who = p.address === 'members' ? 'room members' : p.address === 'users' ? people
    : p.address === 'moderate' ? `${people}; others through you` : 'only you';
  const steer = p.steering ? `steers on${p.maxSteers ? ` (max ${p.maxSteers}/turn)` : ''}` : 'steers off (queue)';
  const auto = (p.autoApprove || []).length ? ` · auto-approves ${p.autoApprove.join(', ')}` : '';
  return `Addressable by ${who} · ${steer}${auto}`;
}
