// render/message.js — one message element: author, time, formatted body,
// collapsed agent tool output, and the receipts of its agent mentions.

import { h, avatar, fmtTime, fmtFull, fmtDay, shortTurn } from '../dom.js';
import { render } from './markdown.js';
import { renderReceipts } from '../receipts.js';
import { state } from '../store.js';
import { filesEl } from './files.js';
import { reactionsEl } from './reactions.js';
import { threadLineEl } from './threadline.js';
import { actionsEl } from './actions.js';

// Agent output is collapsed when the hub marks it (kind "tool" or
// "progress"), when its text starts with a tool marker, or when it is long.
export const TOOL_MARKERS = /^(?:⚙|🔧|🛠|\$ |\[tool\]|tool:|running:|ran:|exec:|\u25B8 )/i;
const LABELS = { tool: 'Tool', progress: 'Progress', long: 'Output' };
const LONG_CHARS = 1200;
const LONG_LINES = 18;

export function isToolText(text) {
  return TOOL_MARKERS.test(String(text || '').trimStart());
}

function collapsible(m) {
  if (m.authorKind !== 'agent') return null;
  const text = String(m.text || '');
  const lines = text.split('\n').length;
  if (m.kind === 'tool' || m.kind === 'progress') return m.kind;
  if (isToolText(text)) return 'tool';
  if (text.length > LONG_CHARS || lines > LONG_LINES) return 'long';
  return null;
}

function body(m) {
  const el = h('div', { class: 'message-body' });
  if (m.deleted) {
    const by = m.deletedBy && m.deletedBy !== m.author ? ` by @${m.deletedBy}` : '';
    el.append(h('p', { class: 'message-tombstone' }, `This message was deleted${by}.`));
    return el;
  }
  const kind = collapsible(m);
  if (!kind) {
    if (m.text) el.append(render(m.text, { me: state.me?.name }));
    if (m.editedAt) {
      // At the end of the last paragraph when there is one.
      const last = el.querySelector('.md')?.lastElementChild;
      (last && last.tagName === 'P' ? last : el).append(edited(m));
    }
    return el;
  }
  const text = String(m.text || '');
  const first = text.trimStart().split('\n')[0];
  const lines = text.split('\n').length;
  const summary = first.length > 120 ? first.slice(0, 117) + '…' : first;
  const details = h('details', { class: `collapsed-output collapsed-${kind}` },
    h('summary', null,
      h('span', { class: 'collapsed-label' }, LABELS[kind]),
      h('span', { class: 'collapsed-summary' }, summary),
      lines > 1 ? h('span', { class: 'collapsed-lines' }, `${lines} lines`) : null),
    h('div', { class: 'collapsed-body' }, render(text, { me: state.me?.name })));
  el.append(details);
  if (m.editedAt) el.append(edited(m));
  return el;
}

function edited(m) {
  return h('span', { class: 'message-edited', title: `edited ${fmtFull(m.editedAt)}` }, '(edited)');
}

function authorLabel(m) {
  if (m.authorKind === 'agent') return '@' + m.author;
  return m.author;
}

// The author line: name, agent tag, time, turn.
export function messageHead(m) {
  const mine = m.authorKind === 'user' && m.author === state.me?.name;
  return h('div', { class: 'message-head' },
    h('span', { class: 'message-author' }, authorLabel(m)),
    m.authorKind === 'agent' ? h('span', { class: 'tag tag-agent' }, 'agent') : null,
    mine ? h('span', { class: 'sr-only' }, '(you)') : null,
    h('time', { class: 'message-time', datetime: m.createdAt, title: fmtFull(m.createdAt) }, fmtTime(m.createdAt)),
    m.turnId ? h('span', { class: 'message-turn', title: `turn ${m.turnId}` }, 'turn ' + shortTurn(m.turnId)) : null);
}

/**
 * messageEl(m, {compact}) — compact hides the avatar and name when the same
 * author continues within a few minutes.
 */
export function messageEl(m, { compact = false, inThread = false } = {}) {
  const mine = m.authorKind === 'user' && m.author === state.me?.name;
  if (m.authorKind === 'system') {
    return h('div', { class: 'message message-system', role: 'article', dataset: { id: m.id, authorKind: 'system' } },
      h('span', { class: 'message-system-text' }, render(m.text, { me: state.me?.name, inline: true })),
      h('time', { class: 'message-time', datetime: m.createdAt, title: fmtFull(m.createdAt) }, fmtTime(m.createdAt)));
  }
  const receipts = h('ul', { class: 'receipts', 'aria-label': 'Delivery to agents', hidden: true });
  renderReceipts(receipts, m.id);
  const head = compact ? null : messageHead(m);
  const cls = ['message', `message-${m.authorKind}`];
  if (compact) cls.push('message-compact');
  if (mine) cls.push('message-mine');
  if (m.deleted) cls.push('message-deleted');
  if (m.partial) cls.push('message-partial');
  return h('article', {
    class: cls.join(' '),
    dataset: { id: m.id, author: m.author, authorKind: m.authorKind, kind: m.kind || null, thread: m.thread || null, edited: m.editedAt ? 'true' : null, deleted: m.deleted ? 'true' : null },
    'aria-label': `${authorLabel(m)} at ${fmtTime(m.createdAt)}`,
  },
  h('div', { class: 'message-gutter' }, compact ? h('span', { class: 'message-time-hover' }, fmtTime(m.createdAt)) : avatar(m.author, m.authorKind)),
  h('div', { class: 'message-main' }, head, body(m), m.deleted ? null : filesEl(m), m.deleted ? null : reactionsEl(m), receipts,
    inThread ? null : threadLineEl(m)),
  actionsEl(m, { inThread }));
}

export function daySeparator(iso) {
  return h('div', { class: 'day-separator', role: 'separator' }, h('span', null, fmtDay(iso)));
}
