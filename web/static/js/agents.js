// agents.js — the agent panel for the open room: each agent's owner,
// harness, state, current turn and who steered it, the caller's mention
// mode; the owner's Stop, policy and remove; adding or inviting an agent.

import { api, ApiError } from './api.js';
import { h, append, clear, avatar, toast, shortTurn } from './dom.js';
import { state, on, emit, isMine, patchAgent, liveMark, liveSince } from './store.js';
import { policyForm, policySummary } from './policy.js';
import { statusWord } from './mentions.js';
import { confirmDialog } from './dialog.js';
import { openTimeline } from './timeline.js';
import { invitationRow } from './invitations.js';
import { ceilingRow, updateCeiling } from './ceilings.js';
import { signIfEnrolled } from './signing.js';

const panel = () => document.getElementById('agent-panel');
let rows = new Map(); // handle → row element
let drawnRoom = null;

export function initAgents() {
  on('agents', ({ room }) => { if (!room || room === state.current) render(); });
  on('current', render);
  on('invitations', render);
}

// loadRoomAgents fetches the room's agents; a 404 for the endpoint marks
// the agent features as absent on this hub.
export async function loadRoomAgents(room) {
  if (!room || state.features.agents === false) return;
  try {
    const mark = liveMark();
    const list = liveSince(await api.roomAgents(room), mark);
    state.features.agents = true;
    state.roomAgents.set(room, list);
  } catch (ex) {
    if (ex instanceof ApiError && ex.missing) state.features.agents = false;
    else if (ex.status !== 404) toast(`Could not load agents: ${ex.message}`, 'error');
  }
  emit('agents', { room });
}

export async function loadAllAgents() {
  try {
    const mark = liveMark();
    state.allAgents = liveSince(await api.agents(), mark);
    state.features.agents = true;
  } catch (ex) {
    if (ex instanceof ApiError && ex.missing) state.features.agents = false;
  }
}

function render() {
  const el = panel();
  const room = state.current;
  if (drawnRoom !== room) { clear(el); rows = new Map(); drawnRoom = room; }
  if (!room) { clear(el).append(h('p', { class: 'panel-note' }, 'Open a room to see its agents.')); rows = new Map(); return; }
  if (state.features.agents === false) {
    clear(el);
    rows = new Map();
    el.append(h('p', { class: 'panel-note', id: 'agents-unavailable' }, 'Agents are not available on this hub yet. Chat works as usual.'));
    return;
  }
  const agents = state.roomAgents.get(room);
  let list = el.querySelector('.agent-list');
  if (!list) {
    clear(el);
    list = h('ul', { class: 'agent-list', 'aria-label': 'Agents in this room' });
    el.append(list, h('div', { class: 'panel-invites' }), addAgentForm());
  }
  if (!agents) {
    if (!list.querySelector('.muted')) list.append(h('li', { class: 'muted' }, 'Loading agents…'));
    return;
  }
  list.querySelectorAll(':scope > li:not(.agent-row)').forEach((n) => n.remove());
  const seen = new Set();
  for (const a of agents) {
    seen.add(a.handle);
    let row = rows.get(a.handle);
    if (!row) { row = buildRow(a); rows.set(a.handle, row); }
    updateRow(row, a);
    list.append(row); // keeps order
  }
  for (const [handle, row] of rows) if (!seen.has(handle)) { row.remove(); rows.delete(handle); }
  if (!agents.length) list.append(h('li', { class: 'empty-agents muted' }, 'No agents in this room yet. Add one below — it joins once its owner agrees.'));
  renderInvites(el.querySelector('.panel-invites'));
}

function buildRow(a) {
  const mine = isMine(a.handle);
  const row = h('li', { class: 'agent-row', dataset: { handle: a.handle } });
  const timelineBtn = h('button', { type: 'button', class: 'small-button timeline', onclick: () => openTimeline(a.handle) }, 'Timeline');
  const actions = h('div', { class: 'agent-actions' }, timelineBtn);
  if (mine) {
    const stop = h('button', {
      type: 'button', class: 'small-button danger stop', title: 'Stop the running turn',
      onclick: async () => {
        stop.disabled = true;
        try { await api.interrupt(a.handle); toast(`Stop sent to @${a.handle}`); }
        catch (ex) { toast(ex.message, 'error'); }
        finally { stop.disabled = false; updateRow(row, currentAgent(a.handle) || a); }
      },
    }, 'Stop');
    const remove = h('button', {
      type: 'button', class: 'small-button remove-agent',
      onclick: async () => {
        if (!(await confirmDialog(`Remove @${a.handle} from this room?`, 'Remove'))) return;
        try { await api.removeAgent(state.current, a.handle); await loadRoomAgents(state.current); }
        catch (ex) { toast(ex.message, 'error'); }
      },
    }, 'Remove');
    actions.prepend(stop);
    actions.append(remove);
  }
  append(row, [
    h('div', { class: 'agent-row-head' },
      avatar(a.handle, 'agent', 'avatar-sm'),
      h('div', { class: 'agent-id' },
        h('span', { class: 'agent-name' }, '@' + a.handle),
        h('span', { class: 'agent-meta' })),
      h('span', { class: 'agent-status' })),
    h('p', { class: 'agent-turn' }),
    h('p', { class: 'agent-mode' }),
    ceilingRow(a, mine),
    mine ? h('p', { class: 'agent-policy-summary muted' }) : null,
    actions,
    mine ? policyForm(a, (policy) => { patchAgent(a.handle, { policy }); updateRow(row, currentAgent(a.handle) || a); }) : null]);
  return row;
}

function currentAgent(handle) {
  return (state.roomAgents.get(state.current) || []).find((x) => x.handle === handle);
}

function updateRow(row, a) {
  const status = a.status || 'offline';
  row.dataset.status = status;
  const pill = row.querySelector('.agent-status');
  pill.dataset.status = status;
  pill.textContent = statusWord(status);
  row.querySelector('.agent-meta').textContent =
    `owner @${a.owner} · ${a.harness || 'agent'} · ${a.canSteer ? 'steerable' : 'queues follow-ups'}`;
  const turn = row.querySelector('.agent-turn');
  const steeredBy = (a.steeredBy || []).filter(Boolean);
  if (a.turnId) {
    turn.hidden = false;
    clear(turn).append(
      h('span', { class: 'agent-turn-label' }, 'Turn '),
      h('code', { title: a.turnId }, shortTurn(a.turnId)),
      steeredBy.length ? ` · steered by ${steeredBy.map((s) => '@' + s).join(', ')}` : ' · owner only');
  } else {
    turn.hidden = true;
    clear(turn);
  }
  const mode = row.querySelector('.agent-mode');
  mode.dataset.mode = a.mode || '';
  mode.textContent = a.modeText ? `Your mention: ${a.modeText}` : '';
  mode.hidden = !a.modeText;
  updateCeiling(row.querySelector('.agent-ceiling'), a);
  const sum = row.querySelector('.agent-policy-summary');
  if (sum) sum.textContent = policySummary(a.policy);
  const stop = row.querySelector('button.stop');
  if (stop) stop.disabled = !(status === 'working' || status === 'needs-approval');
}

function renderInvites(box) {
  clear(box);
  const pending = [...state.invitations.values()].filter((i) => i.room === state.current && i.status === 'pending');
  if (!pending.length) return;
  box.append(h('h3', { class: 'subhead' }, 'Invited'), h('ul', { class: 'invite-list' }, pending.map(invitationRow)));
}

function addAgentForm() {
  const input = h('input', { id: 'add-agent-input', list: 'add-agent-options', placeholder: 'owner/agent', autocapitalize: 'none', spellcheck: 'false', 'aria-label': 'Agent to add (owner/agent)' });
  const options = h('datalist', { id: 'add-agent-options' });
  const note = h('p', { class: 'form-status', id: 'add-agent-note', role: 'status' });
  const form = h('form', { class: 'add-agent' },
    h('h3', { class: 'subhead' }, 'Add an agent'),
    h('div', { class: 'inline-form' }, input, options, h('button', { id: 'add-agent-submit', type: 'submit', class: 'primary-button' }, 'Add')),
    note,
    h('p', { class: 'field-hint' }, 'Your own agents join at once; for someone else’s, the owner is asked first.'));
  input.addEventListener('focus', () => {
    clear(options);
    const inRoom = new Set((state.roomAgents.get(state.current) || []).map((a) => a.handle));
    for (const a of state.allAgents) if (!inRoom.has(a.handle)) options.append(h('option', { value: a.handle }, `${a.harness || 'agent'} · ${a.status}`));
  });
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const handle = input.value.trim().replace(/^@/, '');
    if (!handle) return;
    note.classList.remove('form-error');
    note.textContent = 'Adding…';
    try {
      // Your own agent joins with your consent, signed by this browser's
      // device: its bridge takes no room on the hub's word.
      const mine = handle.split('/')[0] === state.me.name;
      const signed = mine ? await signIfEnrolled(state.me.name, { kind: 'consent', agent: handle, room: state.current }) : undefined;
      const d = await api.addAgent(state.current, handle, signed);
      input.value = '';
      if (d && d.status === 'invited') {
        note.textContent = `Invitation sent — waiting for @${handle.split('/')[0]} to agree.`;
        if (d.invitation) { state.invitations.set(d.invitation.id, d.invitation); emit('invitations'); }
      } else {
        note.textContent = `@${handle} joined the room.`;
        await loadRoomAgents(state.current);
      }
    } catch (ex) {
      note.classList.add('form-error');
      note.textContent = ex.message;
    }
  });
  return form;
}
