// timeline.js — an agent's persisted timeline (steers, receipts, turns,
// approvals, decisions), filterable by kind and by turn.

import { api } from './api.js';
import { h, append, clear, fmtFull, fmtTime, shortTurn } from './dom.js';
import { openDialog } from './dialog.js';

const MAIN_FIELDS = ['text', 'summary', 'detail', 'message', 'status'];
const WHO_FIELDS = ['sender', 'by', 'actor', 'user', 'decidedBy'];
const SKIP = new Set(['kind', 'type', 'at', 'turnId', 'id', 'agent', ...MAIN_FIELDS, ...WHO_FIELDS]);

export function openTimeline(handle) {
  const kindSel = h('select', { id: 'timeline-kind', 'aria-label': 'Show kind' }, h('option', { value: '' }, 'All kinds'));
  const turnChip = h('span', { class: 'turn-filter', hidden: true });
  const list = h('ol', { class: 'timeline', id: 'timeline-list', 'aria-live': 'polite' });
  const refresh = h('button', { type: 'button', class: 'small-button', id: 'timeline-refresh' }, 'Refresh');
  const body = h('div', { class: 'stack' },
    h('div', { class: 'toolbar' }, h('label', { for: 'timeline-kind' }, 'Kind'), kindSel, turnChip, h('span', { class: 'spacer' }), refresh),
    list);
  openDialog({ id: 'timeline-dialog', title: `Timeline of @${handle}`, body, wide: true });

  let entries = [];
  let turn = '';

  const draw = () => {
    const kind = kindSel.value;
    clear(list);
    const shown = entries.filter((e) => !kind || entryKind(e) === kind);
    if (!shown.length) list.append(h('li', { class: 'muted' }, entries.length ? 'No entries of this kind.' : 'Nothing has happened yet.'));
    for (const e of shown) list.append(entryEl(e, (t) => { turn = t; load(); }));
  };

  const fillKinds = () => {
    const cur = kindSel.value;
    const kinds = [...new Set(entries.map(entryKind))].sort();
    append(clear(kindSel), [h('option', { value: '' }, 'All kinds'), kinds.map((k) => h('option', { value: k }, k))]);
    kindSel.value = kinds.includes(cur) ? cur : '';
  };

  const load = async () => {
    clear(turnChip);
    turnChip.hidden = !turn;
    if (turn) {
      turnChip.append(`Turn ${shortTurn(turn)} `,
        h('button', { type: 'button', class: 'link-button', onclick: () => { turn = ''; load(); } }, 'show all turns'));
    }
    clear(list).append(h('li', { class: 'muted' }, 'Loading…'));
    try {
      entries = await api.timeline(handle, turn);
      fillKinds();
      draw();
    } catch (ex) {
      clear(list).append(h('li', { class: 'form-error' }, ex.missing ? 'Timelines are not available on this hub yet.' : ex.message));
    }
  };

  kindSel.addEventListener('change', draw);
  refresh.addEventListener('click', load);
  load();
}

const entryKind = (e) => e.kind || e.type || 'event';

function entryEl(e, onTurn) {
  const kind = entryKind(e);
  const main = MAIN_FIELDS.map((f) => e[f]).find((v) => v != null && v !== '');
  const who = WHO_FIELDS.map((f) => e[f]).find(Boolean);
  const extra = Object.entries(e).filter(([k, v]) => !SKIP.has(k) && v != null && v !== '' && !(Array.isArray(v) && !v.length));
  return h('li', { class: 'timeline-entry', dataset: { kind } },
    h('time', { class: 'timeline-time', datetime: e.at, title: fmtFull(e.at) }, fmtTime(e.at)),
    h('span', { class: 'timeline-kind', dataset: { kind } }, kind),
    h('div', { class: 'timeline-main' },
      who ? h('span', { class: 'timeline-who' }, '@' + who + ' ') : null,
      main != null ? h('span', { class: 'timeline-text' }, String(main)) : null,
      e.turnId ? h('button', { type: 'button', class: 'link-button timeline-turn', title: `Show only turn ${e.turnId}`, onclick: () => onTurn(e.turnId) }, `turn ${shortTurn(e.turnId)}`) : null,
      extra.length ? h('span', { class: 'timeline-extra' }, extra.map(([k, v]) => `${k}: ${fmtValue(v)}`).join(' · ')) : null));
}

function fmtValue(v) {
  if (Array.isArray(v)) return v.join(', ');
  if (typeof v === 'object') return JSON.stringify(v);
  const s = String(v);
  return s.length > 80 ? s.slice(0, 77) + '…' : s;
}
