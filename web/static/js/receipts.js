// receipts.js — what became of each agent mention, shown beside the message.

import { h, clear, fmtTime, fmtFull } from './dom.js';
import { receiptsFor, agentByHandle, agentOwner } from './store.js';

const REASONS = {
  'not-a-member': 'you are not a member of this room',
  'not-allowed': 'the owner does not let you address this agent',
  'agent-not-in-room': 'the agent is not in this room',
  'agent-offline': 'the agent is offline',
  'agent-failed': 'the agent has failed',
  'agent-busy': 'too many messages are waiting for the agent',
  'stale-turn': 'the turn it was meant for had already changed',
  'turn-ended': 'the turn had ended',
  'rate-limited': 'too many messages — slow down',
  'steering-disabled': 'the owner turned steering off',
  'steer-limit': 'this turn reached its steer limit',
  expired: 'it waited too long',
  'unknown-agent': 'no such agent',
  timeout: 'the agent’s bridge did not answer in time',
  'peer-agent': 'agents do not take instructions from agents',
  declined: 'the owner declined to forward it',
};

export function reasonText(reason) {
  return REASONS[reason] || reason || 'no reason given';
}

// receiptText says in words what became of a mention: on its way, working
// (or waiting for the owner's approval), queued, then the turn's outcome —
// never a turn id.
export function receiptText(r) {
  return withTeammate(r, baseText(r));
}

function baseText(r) {
  const how = { started: 'started a turn', steered: 'steered the running turn', delivered: 'started a turn after waiting' };
  switch (r.status) {
    case 'pending': return r.forwardedBy ? `forwarded by @${r.forwardedBy} · on its way…` : 'on its way…';
    case 'held': return r.detail || `waiting for @${agentOwner(r.agent)}`;
    case 'started': case 'steered': case 'delivered': {
      const a = agentByHandle(r.agent);
      let text = `working · ${how[r.status]}`;
      if (a && a.status === 'needs-approval' && (!a.turnId || a.turnId === r.turnId)) {
        text = r.status === 'steered' ? `steered the running turn · waiting for @${agentOwner(r.agent)}'s approval` : `waiting for @${agentOwner(r.agent)}'s approval`;
      }
      // The bridge's word on how it took them (a teammate's words: why).
      return r.detail ? `${text} · ${r.detail}` : text;
    }
    case 'queued': {
      const q = r.expires ? `queued for after this turn · until ${fmtTime(r.expires)}` : 'queued for after this turn';
      return r.teammate === r.detail && r.detail ? `${q} · ${r.detail}` : q;
    }
    case 'done': return r.forwardedBy ? `done · forwarded by @${r.forwardedBy}` : 'done';
    case 'interrupted': return r.detail || 'stopped';
    case 'failed': return `failed: ${r.detail || 'the turn failed'}`;
    case 'expired': return r.detail ? `expired: ${r.detail}` : 'expired';
    case 'rejected': return `not delivered: ${r.detail || reasonText(r.reason)}`;
    default: return r.status || 'unknown';
  }
}

// asTeammate: the bridge took the words as a teammate's, not the owner's
// (unsigned, or a signature that did not verify); its detail said why
// (kept as teammate once the receipt moves on, store.js), shown as the
// bridge wrote it.
function asTeammate(r) {
  return !!r.teammate || /^Treated as a teammate/.test(r.detail || '');
}

// withTeammate adds the bridge's note to a receipt's text once its detail
// says something else (the turn's outcome).
function withTeammate(r, text) {
  return r.teammate && r.teammate !== r.detail ? `${text} · ${r.teammate}` : text;
}

function receiptTitle(r) {
  const parts = [`@${r.agent}: ${r.status}${r.via ? ` (${r.via})` : ''}`];
  if (r.reason) parts.push(`reason: ${r.reason}`);
  if (r.detail) parts.push(r.detail);
  if (r.turnId) parts.push(`turn ${r.turnId}`);
  if (r.expires) parts.push(`expires ${fmtFull(r.expires)}`);
  if (r.at) parts.push(`at ${fmtFull(r.at)}`);
  return parts.join('\n');
}

export function receiptEl(r) {
  return h('li', {
    class: 'receipt',
    dataset: { status: r.status, via: r.via || null, agent: r.agent, steer: r.steerId, reason: r.reason || null, forwardedBy: r.forwardedBy || null, placement: asTeammate(r) ? 'teammate' : null },
    title: receiptTitle(r),
  },
  h('span', { class: 'receipt-icon', 'aria-hidden': 'true' }),
  h('span', { class: 'receipt-agent' }, '@' + r.agent),
  h('span', { class: 'receipt-text' }, receiptText(r)));
}

// Fill (or refresh) the receipts list of one message element.
export function renderReceipts(list, messageId) {
  const rs = receiptsFor(messageId);
  clear(list);
  list.hidden = rs.length === 0;
  for (const r of rs) list.append(receiptEl(r));
}
