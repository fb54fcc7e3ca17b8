// receipts.js — what became of each agent mention, shown beside the message.

import { h, clear, shortTurn, fmtTime, fmtFull } from './dom.js';
import { receiptsFor } from './store.js';

const REASONS = {
  'not-a-member': 'you are not a member of this room',
  'not-allowed': 'the owner does not let you address this agent',
  'agent-not-in-room': 'the agent is not in this room',
  'agent-offline': 'the agent is offline',
  'agent-failed': 'the agent has failed',
  'stale-turn': 'the turn it was meant for had already changed',
  'turn-ended': 'the turn had ended',
  'rate-limited': 'too many messages — slow down',
  'steering-disabled': 'the owner turned steering off',
  'steer-limit': 'this turn reached its steer limit',
  expired: 'it waited too long',
  'unknown-agent': 'no such agent',
  timeout: 'the agent’s bridge did not answer in time',
  'peer-agent': 'agents do not take instructions from agents',
};

export function reasonText(reason) {
  return REASONS[reason] || reason || 'no reason given';
}

export function receiptText(r) {
  const turn = r.turnId ? ` ${shortTurn(r.turnId)}` : '';
  switch (r.status) {
    case 'pending': return 'pending';
    case 'started': return `started turn${turn}`;
    case 'steered': return `steered into turn${turn}`;
    case 'queued': return r.expires ? `queued · expires ${fmtTime(r.expires)}` : 'queued';
    case 'delivered': return 'delivered';
    case 'expired': return r.detail ? `expired: ${r.detail}` : 'expired';
    case 'rejected': return `rejected: ${r.detail || reasonText(r.reason)}`;
    default: return r.status || 'unknown';
  }
}

function receiptTitle(r) {
  const parts = [`@${r.agent}: ${r.status}`];
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
    dataset: { status: r.status, agent: r.agent, steer: r.steerId, reason: r.reason || null },
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
