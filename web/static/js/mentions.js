// mentions.js — @mention autocomplete for the composer: people and agents in
// the open room (agents with owner and status). A WAI-ARIA combobox: arrow
// keys move, Enter or Tab picks, Esc closes.

import { h, clear, avatar, replaceToken } from './dom.js';
import { state } from './store.js';

const MAX = 8;

export function initMentions(ta, listEl, { suppress } = {}) {
  let items = [];
  let active = 0;
  let token = null; // {start, end, query}

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
    token = findToken();
    if (!token) { close(); return; }
    const q = token.query;
    const all = candidates();
    const starts = all.filter((c) => c.value.toLowerCase().startsWith(q) || c.value.split('/').pop().toLowerCase().startsWith(q));
    const contains = all.filter((c) => !starts.includes(c) && c.value.toLowerCase().includes(q));
    items = [...starts, ...contains].slice(0, MAX);
    if (!items.length) { close(); return; }
    active = Math.min(active, items.length - 1);
    draw();
  }

  function draw() {
    clear(listEl);
    items.forEach((c, i) => {
      const li = h('li', {
        id: `mention-opt-${i}`, role: 'option', class: `mention-option${i === active ? ' active' : ''}`,
        'aria-selected': String(i === active), dataset: { value: c.value, kind: c.kind, status: c.status || null },
      },
      avatar(c.value, c.kind, 'avatar-xs'),
      h('span', { class: 'mention-option-title' }, c.title),
      h('span', { class: 'mention-option-sub' }, c.sub));
      li.addEventListener('mousedown', (e) => { e.preventDefault(); pick(i); });
      listEl.append(li);
    });
    listEl.hidden = false;
    ta.setAttribute('aria-expanded', 'true');
    ta.setAttribute('aria-activedescendant', `mention-opt-${active}`);
    listEl.children[active]?.scrollIntoView({ block: 'nearest' });
  }

  function close() {
    items = [];
    active = 0;
    listEl.hidden = true;
    clear(listEl);
    ta.setAttribute('aria-expanded', 'false');
    ta.removeAttribute('aria-activedescendant');
  }

  function pick(i) {
    const c = items[i];
    if (!c || !token) return;
    replaceToken(ta, token, '@' + c.value + ' ');
    close();
    ta.dispatchEvent(new Event('input', { bubbles: true }));
    ta.focus();
  }

  // handleKey returns true when the key was for the autocomplete.
  function handleKey(e) {
    if (listEl.hidden || !items.length) return false;
    switch (e.key) {
      case 'ArrowDown': active = (active + 1) % items.length; draw(); return true;
      case 'ArrowUp': active = (active - 1 + items.length) % items.length; draw(); return true;
      case 'Enter': case 'Tab':
        if (e.shiftKey && e.key === 'Enter') return false;
        pick(active); return true;
      case 'Escape': close(); return true;
      default: return false;
    }
  }

  ta.addEventListener('input', update);
  ta.addEventListener('click', update);
  ta.addEventListener('keyup', (e) => { if (e.key === 'ArrowLeft' || e.key === 'ArrowRight' || e.key === 'Home' || e.key === 'End') update(); });
  ta.addEventListener('blur', () => setTimeout(close, 100));

  return { handleKey, close };
}

export function statusWord(status) {
  return ({ 'needs-approval': 'needs approval' })[status] || status || 'offline';
}
