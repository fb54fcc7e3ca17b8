// timeline.js — an agent's persisted timeline (steers, receipts, turns,
// approvals, decisions), filterable by kind and by turn.

import { api } from './api.js';
import { h, append, clear, fmtFull, fmtTime, shortTurn } from './dom.js';
import { openDialog } from './dialog.js';

const MAIN_FIELDS = ['text', 'summary', 'status', 'tool', 'detail', 'message'];
const WHO_FIELDS = ['actor', 'sender', 'by', 'user', 'decidedBy'];
const SKIP = new Set(['kind', 'type', 'at', 'turnId', 'seq', 'hash', 'prevHash', 'agent', ...WHO_FIELDS]);

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
  let firstBad = -1;

  const draw = () => {
    const kind = kindSel.value;
    clear(list);
    const shown = entries.filter((e) => matches(e, kind));
    if (!shown.length) list.append(h('li', { class: 'muted' }, entries.length ? 'No entries of this kind.' : 'Nothing has happened yet.'));
    for (const e of shown) list.append(entryEl(e, (t) => { turn = t; load(); }));
    if (firstBad >= 0) {
      list.prepend(h('li', { class: 'form-error chain-broken', role: 'alert' },
        `The timeline's hash chain does not verify from entry ${firstBad + 1} on — the record may have been altered.`));
    }
  };

  const fillKinds = () => {
    const cur = kindSel.value;
    append(clear(kindSel), kindOptions(entries));
    kindSel.value = [...kindSel.options].some((o) => o.value === cur) ? cur : '';
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
      const d = await api.timeline(handle, turn);
      entries = d.entries;
      firstBad = turn ? -1 : d.firstBad; // a turn filter starts mid-chain
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
const family = (kind) => kind.split('.')[0];

// Kind filter values: "kind:<exact>" or "family:<prefix>" (e.g. all turn.*).
function matches(e, filter) {
  if (!filter) return true;
  const [how, v] = filter.split(/:(.*)/s);
  return how === 'family' ? family(entryKind(e)) === v : entryKind(e) === v;
}

function kindOptions(entries) {
  const kinds = [...new Set(entries.map(entryKind))].sort();
  const fams = new Map();
  for (const k of kinds) fams.set(family(k), (fams.get(family(k)) || 0) + 1);
  const out = [h('option', { value: '' }, 'All kinds')];
  for (const [f, n] of fams) {
    if (n > 1) out.push(h('option', { value: `family:${f}` }, `${f}.* (all)`));
    for (const k of kinds.filter((x) => family(x) === f)) out.push(h('option', { value: `kind:${k}` }, k));
  }
  return out;
}

// The entry's detail (an object on the hub's timeline, or flat fields).
function details(e) {
  if (e.detail && typeof e.detail === 'object' && !Array.isArray(e.detail)) return { ...e.detail };
  const d = {};
  for (const [k, v] of Object.entries(e)) if (!SKIP.has(k)) d[k] = v;
  if (typeof e.detail === 'string') d.detail = e.detail;
  return d;
}

function entryEl(e, onTurn) {
  const kind = entryKind(e);
  const d = details(e);
  const mainKey = MAIN_FIELDS.find((f) => d[f] != null && d[f] !== '');
  const main = mainKey ? d[mainKey] : null;
  if (mainKey) delete d[mainKey];
  const who = e.actor || WHO_FIELDS.map((f) => e[f]).find(Boolean);
  const extra = Object.entries(d).filter(([, v]) => v != null && v !== '' && !(Array.isArray(v) && !v.length));
  const title = [e.seq != null ? `#${e.seq}` : '', e.hash ? `hash ${e.hash}` : '', e.prevHash ? `prev ${e.prevHash}` : ''].filter(Boolean).join('\n');
  return h('li', { class: 'timeline-entry', dataset: { kind, seq: e.seq ?? null }, title: title || null },
    h('time', { class: 'timeline-time', datetime: e.at, title: fmtFull(e.at) }, fmtTime(e.at)),
    h('span', { class: 'timeline-kind', dataset: { kind } }, kind),
    h('div', { class: 'timeline-main' },
      who ? h('span', { class: 'timeline-who' }, '@' + who) : null,
      main != null ? h('span', { class: 'timeline-text' }, fmtValue(main, 400)) : null,
      e.turnId ? h('button', { type: 'button', class: 'link-button timeline-turn', title: `Show only turn ${e.turnId}`, onclick: () => onTurn(e.turnId) }, `turn ${shortTurn(e.turnId)}`) : null,
      extra.length ? h('span', { class: 'timeline-extra' }, extra.map(([k, v]) => `${k}: ${fmtValue(v)}`).join(' · ')) : null));
}

function fmtValue(v, max = 80) {
  if (Array.isArray(v)) return v.join(', ');
  if (typeof v === 'object') return JSON.stringify(v);
  const s = String(v);
  return s.length > max ? s.slice(0, max - 3) + '…' : s;
}
