// mentions.js — @mention autocomplete for the composer: people and agents in
// the open room (agents with owner and status). A WAI-ARIA combobox: arrow
// keys move, Enter or Tab picks, Esc closes.

import { h, avatar } from './dom.js';
import { combobox } from './combobox.js';
import { state } from './store.js';

const MAX = 8;

export function initMentions(ta, listEl, { suppress } = {}) {
  const box = combobox(ta, listEl, {
    idPrefix: 'mention-opt', className: 'mention-option',
    option: (c) => ({
      dataset: { value: c.value, kind: c.kind, status: c.status || null },
      children: [avatar(c.value, c.kind, 'avatar-xs'), h('span', { class: 'mention-option-title' }, c.title), h('span', { class: 'mention-option-sub' }, c.sub)],
    }),
    insert: (c) => '@' + c.value + ' ',
    passKey: (e) => e.shiftKey && e.key === 'Enter',
  });

  function candidates() {
    const room = state.current;
    const members = state.members.get(room);
    const people = (members ? members.map((m) => m.user) : state.users.map((u) => u.name))
      .filter((n) => n !== state.me?.name)
      .map((n) => {
        const u = state.users.find((x) => x.name === n);
        return { value: n, kind: 'user', title: '@' + n, sub: u && u.display ? u.display : 'person' };
      });
    const agents = (state.roomAgents.get(room) || []).map((a) => ({
      value: a.handle, kind: 'agent', title: '@' + a.handle,
      sub: `agent of @${a.owner} · ${statusWord(a.status)}${a.modeText ? ' · ' + a.modeText : ''}`,
      status: a.status, mode: a.mode,
    }));
    return [...agents, ...people];
  }

  function findToken() {
    if (suppress && suppress()) return null;
    const pos = ta.selectionStart;
    if (pos !== ta.selectionEnd) return null;
    const before = ta.value.slice(0, pos);
    const m = /(^|[\s(\[{,;])@([a-z0-9_.\/-]*)$/i.exec(before);
    if (!m) return null;
    return { start: pos - m[2].length - 1, end: pos, query: m[2].toLowerCase() };
  }

  function update() {
    const token = findToken();
    if (!token) { box.close(); return; }
    const q = token.query;
    const all = candidates();
    const starts = all.filter((c) => c.value.toLowerCase().startsWith(q) || c.value.split('/').pop().toLowerCase().startsWith(q));
    const contains = all.filter((c) => !starts.includes(c) && c.value.toLowerCase().includes(q));
    box.show([...starts, ...contains].slice(0, MAX), token);
  }

  ta.addEventListener('input', update);
  ta.addEventListener('click', update);
  ta.addEventListener('keyup', (e) => { if (e.key === 'ArrowLeft' || e.key === 'ArrowRight' || e.key === 'Home' || e.key === 'End') update(); });
  ta.addEventListener('blur', () => setTimeout(box.close, 100));

  return { handleKey: box.handleKey, close: box.close };
}

export function statusWord(status) {
  return ({ 'needs-approval': 'needs approval' })[status] || status || 'offline';
}
