// search.js — searching messages (the header's search button, or Ctrl/⌘+K):
// results newest first from the rooms you are in, each with its room, author
// and a snippet whose matched words are highlighted; a click opens the room
// (or the thread) at that message. "quoted words" match as a phrase, a
// trailing * as a prefix; everything else is just words.

import { api } from './api.js';
import { h, clear, icon, avatar, fmtFull, fmtDay, fmtTime, debounce } from './dom.js';
import { state, roomLabel, isDM, next } from './store.js';
import { actions } from './actions.js';
import { openDialog } from './dialog.js';
import { jumpTo } from './messages.js';
import { openThread } from './thread.js';

export function initSearch() {
  const btn = h('button', { id: 'search-button', type: 'button', class: 'ghost-button', 'aria-label': 'Search messages', title: 'Search messages (Ctrl+K)', onclick: () => openSearch() }, icon('search'));
  document.getElementById('room-actions').prepend(btn);
  document.addEventListener('keydown', (e) => {
    if ((e.ctrlKey || e.metaKey) && !e.altKey && e.key.toLowerCase() === 'k' && state.me && !document.querySelector('dialog[open]')) {
      e.preventDefault();
      openSearch();
    }
  });
}

// snippetNodes turns the hub's snippet — escaped text whose only markup is
// <mark>…</mark> — into text nodes and <mark> elements; nothing is parsed
// as HTML.
export function snippetNodes(snippet) {
  const out = [];
  let marked = false;
  for (const part of String(snippet || '').split(/(<mark>|<\/mark>)/)) {
    if (part === '<mark>') { marked = true; continue; }
    if (part === '</mark>') { marked = false; continue; }
    if (!part) continue;
    const text = part.replace(/&(lt|gt|amp|quot|#39|#x27);/g, (_, e) => ({ lt: '<', gt: '>', amp: '&', quot: '"', '#39': "'", '#x27': "'" })[e]);
    out.push(marked ? h('mark', null, text) : text);
  }
  return out;
}

function openSearch() {
  const input = h('input', { id: 'search-input', type: 'search', placeholder: 'Search messages', 'aria-label': 'Search messages', autocomplete: 'off', spellcheck: 'false' });
  const scope = h('select', { id: 'search-scope', 'aria-label': 'Where to search' },
    h('option', { value: '' }, 'All my rooms'),
    state.current ? h('option', { value: state.current }, `Only ${roomLabel(state.rooms.get(state.current))}`) : null);
  const status = h('p', { id: 'search-status', class: 'muted search-status', role: 'status' }, 'Words must all match; "a phrase" in quotes; dep* for a prefix.');
  const results = h('ul', { id: 'search-results', class: 'search-results' });
  const more = h('button', { id: 'search-more', type: 'button', class: 'small-button', hidden: true }, 'Older results');
  const dlg = openDialog({ id: 'search-dialog', title: 'Search', wide: true, body: h('div', { class: 'stack search' }, h('div', { class: 'search-bar' }, input, scope), status, results, more) });
  let seq = 0;
  let next = null;

  async function run(append = false) {
    const q = input.value.trim();
    const mine = ++seq;
    if (!append) { clear(results); next = null; more.hidden = true; }
    if (!q) { status.textContent = 'Words must all match; "a phrase" in quotes; dep* for a prefix.'; return; }
    status.textContent = 'Searching…';
    try {
      const d = await api.search(q, { room: scope.value || undefined, before: append ? next : undefined, limit: 20 });
      if (mine !== seq) return;
      const rs = d.results || [];
      next = d.next || null;
      more.hidden = !next;
      for (const r of rs) results.append(resultEl(r, dlg));
      const n = results.children.length;
      status.textContent = n ? `${n}${next ? '+' : ''} message${n === 1 ? '' : 's'}, newest first` : `Nothing found for ${q}.`;
    } catch (ex) {
      if (mine !== seq) return;
      status.textContent = ex.missing ? 'This hub cannot search yet.' : `Search failed: ${ex.message}`;
    }
  }
  const runSoon = debounce(() => run(false), 250);
  input.addEventListener('input', runSoon);
  input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') { e.preventDefault(); run(false); }
    if (e.key === 'Escape') { e.preventDefault(); dlg.close(); } // not just clear the field
  });
  scope.addEventListener('change', () => run(false));
  more.addEventListener('click', () => run(true));
  results.addEventListener('keydown', (e) => {
    const items = [...results.querySelectorAll('.search-hit')];
    const i = items.indexOf(document.activeElement);
    if (e.key === 'ArrowDown') { e.preventDefault(); items[Math.min(i + 1, items.length - 1)]?.focus(); }
    if (e.key === 'ArrowUp') { e.preventDefault(); (i <= 0 ? input : items[i - 1]).focus(); }
  });
  input.addEventListener('keydown', (e) => { if (e.key === 'ArrowDown') { e.preventDefault(); results.querySelector('.search-hit')?.focus(); } });
  input.focus();
}

function resultEl(r, dlg) {
  const m = r.message || {};
  const room = state.rooms.get(m.room);
  const where = room ? (isDM(room) ? roomLabel(room) : '#' + room.name) : m.room;
  return h('li', { class: 'search-result', dataset: { id: m.id, room: m.room, thread: m.thread || null } },
    h('button', {
      type: 'button', class: 'search-hit',
      onclick: () => { dlg.close(); show(m); },
    },
    avatar(m.author, m.authorKind, 'avatar-sm'),
    h('span', { class: 'search-main' },
      h('span', { class: 'search-meta' },
        h('strong', null, m.authorKind === 'agent' ? '@' + m.author : m.author), ' in ', h('span', { class: 'search-room' }, where),
        m.thread ? h('span', { class: 'muted' }, ' · in a thread') : null,
        ' · ', h('time', { datetime: m.createdAt, title: fmtFull(m.createdAt) }, `${fmtDay(m.createdAt)} ${fmtTime(m.createdAt)}`)),
      h('span', { class: 'search-snippet' }, snippetNodes(r.snippet)))));
}

// show opens the message's room (or thread) at the message.
async function show(m) {
  if (state.current !== m.room) {
    const opened = next('current', 5000);
    actions.go(m.room);
    await opened;
    if (state.current !== m.room) return; // it did not open (left meanwhile): the page says why
  }
  if (m.thread) await openThread(m.room, m.thread, { highlight: m.id });
  else await jumpTo(m.room, m.id);
}
