// render/activity.js — an agent's tool and progress output: consecutive
// steps of one turn fold into one "Activity" block that shows the latest
// step; the others are a click away.

import { h, avatar, fmtTime, fmtFull } from '../dom.js';
import { render } from './markdown.js';
import { isToolText, messageHead } from './message.js';
import { state } from '../store.js';

export function isActivity(m) {
  return m.authorKind === 'agent' && (m.kind === 'tool' || m.kind === 'progress' || (!m.kind && isToolText(m.text)));
}

export class ActivityGroup {
  constructor(first, { compact = false } = {}) {
    this.author = first.author;
    this.turnId = first.turnId || '';
    this.count = 0;
    this.steps = h('ol', { class: 'activity-steps' });
    this.last = h('span', { class: 'activity-last' });
    this.countEl = h('span', { class: 'activity-count' });
    const details = h('details', { class: 'activity' },
      h('summary', null, h('span', { class: 'collapsed-label' }, 'Activity'), this.last, this.countEl),
      this.steps);
    this.el = h('article', {
      class: `message message-agent activity-group${compact ? ' message-compact' : ''}`,
      dataset: { author: first.author, authorKind: 'agent', turn: first.turnId || null },
      'aria-label': `Activity of @${first.author}`,
    },
    h('div', { class: 'message-gutter' }, compact ? null : avatar(first.author, 'agent')),
    h('div', { class: 'message-main' }, compact ? null : messageHead(first), details));
  }

  // accepts reports whether m continues this block.
  accepts(m) {
    return isActivity(m) && m.author === this.author && (m.turnId || '') === this.turnId;
  }

  add(m) {
    const text = String(m.text || '');
    const step = h('li', { class: 'activity-step', dataset: { id: m.id, kind: m.kind || 'tool' } },
      h('time', { class: 'message-time', datetime: m.createdAt, title: fmtFull(m.createdAt) }, fmtTime(m.createdAt)),
      h('span', { class: 'activity-kind' }, m.kind === 'progress' ? 'progress' : 'tool'),
      h('div', { class: 'activity-text' }, render(text, { me: state.me?.name })));
    this.steps.append(step);
    this.count++;
    const first = text.trimStart().split('\n')[0];
    this.last.textContent = first.length > 140 ? first.slice(0, 137) + '…' : first;
    this.countEl.textContent = this.count > 1 ? `${this.count} steps` : '';
    return step;
  }
}
