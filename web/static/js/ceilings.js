// ceilings.js — what turns started from a room may do, per agent: read-only
// (nothing that writes or runs), ask (every side effect to the owner) or
// normal. Everyone in the room sees it; the owner sets it (a stricter one
// as is, a looser one signed with one of their devices — the bridge
// enforces it).

import { api } from './api.js';
import { h, clear, toast } from './dom.js';
import { state } from './store.js';
import { sign, NoDeviceError } from './signing.js';
import { openDevices } from './devices.js';

export const CEILINGS = [
  ['normal', 'Normal', 'your policy as it is'],
  ['ask', 'Ask', 'every command and change asks you; nothing is auto-approved'],
  ['read-only', 'Read-only', 'nothing that writes or runs; it is refused without asking you'],
];
const RANK = { 'read-only': 0, ask: 1, normal: 2 };

// ceilingWords: "read-only", "ask" — "" for normal (nothing to say).
export function ceilingWords(c) {
  return c && c !== 'normal' ? c : '';
}

// ceilingHint is the composer's note for an agent in a room.
export function ceilingHint(a, room) {
  const c = ceilingWords(a && a.ceiling);
  if (!c) return '';
  return `in #${room}: ${c === 'ask' ? 'asks the owner before every command' : 'read-only'}`;
}

// ceilingRow(a) → the agent row's line: a select for the owner, a note for
// the others (hidden when normal).
export function ceilingRow(a, mine) {
  const box = h('div', { class: 'agent-ceiling', dataset: { ceiling: a.ceiling || 'normal' } });
  if (!mine) return box;
  const select = h('select', { class: 'ceiling-select', 'aria-label': `What turns from this room may do for @${a.handle}` },
    CEILINGS.map(([v, label]) => h('option', { value: v }, label)));
  select.addEventListener('change', async () => {
    const room = state.current;
    const cur = box.dataset.ceiling || 'normal';
    const next = select.value;
    select.disabled = true;
    try {
      let signed;
      if (RANK[next] > RANK[cur]) signed = await sign(state.me.name, { kind: 'ceiling', agent: a.handle, room, ceiling: next });
      await api.setCeiling(room, a.handle, next, signed);
      a.ceiling = next;
      updateCeiling(box, a);
      toast(`@${a.handle} in #${room}: ${next}`);
    } catch (ex) {
      select.value = cur;
      if (ex instanceof NoDeviceError) openDevices(`Making #${room} ${next} for @${a.handle} lets it do more, so it needs this browser to be enrolled.`);
      else toast(ex.message, 'error');
    } finally {
      select.disabled = false;
    }
  });
  box.append(h('label', { class: 'ceiling-label' }, h('span', null, 'In this room: '), select), h('small', { class: 'muted ceiling-tip' }));
  return box;
}

export function updateCeiling(box, a) {
  const c = a.ceiling || 'normal';
  box.dataset.ceiling = c;
  const select = box.querySelector('select');
  if (select) {
    select.value = c;
    box.querySelector('.ceiling-tip').textContent = (CEILINGS.find(([v]) => v === c) || [])[2] || '';
    return;
  }
  clear(box);
  box.hidden = !ceilingWords(c);
  if (!box.hidden) box.append(h('span', { class: 'ceiling-badge' }, c === 'ask' ? 'asks the owner before every command here' : 'read-only in this room'));
}
