// render/threadline.js — under a thread's root in the channel: the agent
// turns in it with their state, and the reply count ("@alice/codex working ·
// 3 replies"). A click opens the thread.

import { h, fmtTime, fmtFull } from '../dom.js';
import { emit, agentOwner } from '../store.js';

const TURN_WORDS = {
  running: 'working',
  'needs-approval': null, // waiting for @owner's approval
  completed: 'done',
  interrupted: 'stopped',
  failed: 'failed',
};

export function turnWords(t) {
  if (t.status === 'needs-approval') return `waiting for @${agentOwner(t.agent)}'s approval`;
  return TURN_WORDS[t.status] || t.status || '';
}

export function threadLineEl(m) {
  const r = m.replies;
  if (!r || (!r.count && !(r.turns || []).length)) return null;
  // The newest turn of each agent says where that agent is.
  const latest = new Map();
  for (const t of r.turns || []) latest.set(t.agent, t);
  const parts = [...latest.values()].map((t) => h('span', { class: 'thread-turn', dataset: { agent: t.agent, status: t.status } },
    h('span', { class: 'thread-turn-dot', 'aria-hidden': 'true' }),
    h('span', { class: 'thread-turn-agent' }, '@' + t.agent), ' ', turnWords(t)));
  const count = r.count || 0;
  return h('button', {
    type: 'button', class: 'thread-line', dataset: { root: m.id, count },
    onclick: () => emit('open-thread', { room: m.room, root: m.id }),
    'aria-label': `Open the thread: ${count} repl${count === 1 ? 'y' : 'ies'}`,
  },
  parts.length ? parts.flatMap((p, i) => (i ? [' · ', p] : [p])) : null,
  parts.length ? ' · ' : null,
  h('span', { class: 'thread-count' }, `${count} repl${count === 1 ? 'y' : 'ies'}`),
  r.lastAt ? h('time', { class: 'thread-last', datetime: r.lastAt, title: fmtFull(r.lastAt) }, ` · last ${fmtTime(r.lastAt)}`) : null);
}
