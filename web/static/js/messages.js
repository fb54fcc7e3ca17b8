// messages.js — the open room's message list: first page, infinite scroll
// upward (before=ID), live appends, grouping, day separators, receipts.

import { api, takeEarly } from './api.js';
import { h, clear, dayKey, announce } from './dom.js';
import { state, on, logFor, mergeReceipt, roomLabel, receiptsFor, RoomLog } from './store.js';
import { messageEl, daySeparator } from './render/message.js';
import { isActivity, ActivityGroup } from './render/activity.js';
import { renderReceipts, receiptText } from './receipts.js';
import { markRead } from './unread.js';
import { carryEdit } from './edit.js';

export const PAGE = 50;
const AROUND = 100;   // a jump far back shows this many messages around the target
const BACK_PAGES = 2; // pages of 200 read back in order before jumping there instead
const GROUP_MS = 5 * 60 * 1000;

const list = () => document.getElementById('messages');
const jump = () => document.getElementById('jump-latest');

let room = null;          // the room being shown
let els = new Map();      // message id → element
let lastShown = null;     // the last message rendered (for grouping)
let group = null;         // the open ActivityGroup (tool/progress steps)
let lastActivity = null;  // the last message put into it
let errorText = '';

let stick = true; // the list was at the bottom before its size changed
let ourTop = -1;  // the scrollTop we set last

export function initMessages() {
  list().addEventListener('scroll', onScroll, { passive: true });
  // Keep the newest message in view when the tray, banner or composer grows.
  new ResizeObserver(() => { if (stick) scrollToBottom(); }).observe(list());
  jump().addEventListener('click', () => {
    if (room && logFor(room).detached) { backToLatest(); return; }
    scrollToBottom();
    readIfAtBottom();
  });
  document.addEventListener('visibilitychange', readIfAtBottom);
  window.addEventListener('focus', readIfAtBottom);
  on('updated', (m) => { if (m.room === room && !m.thread) replaceEl(m.id); });
  on('thread', (d) => { if (d.room === room) replaceEl(d.root); });
  on('reactions', (d) => { if (d.room === room && !d.thread) replaceEl(d.messageId); });
}

// replaceEl renders one message again in place (an edit, a deletion, its
// reactions or its thread's summary changed).
function replaceEl(id) {
  const node = els.get(id);
  const m = room && logFor(room).byId.get(id);
  if (!node || !m) return;
  const atBottom = stick || nearBottom();
  if (!node.matches('article.message[data-id]')) {
    // An activity step: the block is rebuilt with the list.
    const el = list();
    const fromBottom = el.scrollHeight - el.scrollTop;
    renderAll();
    el.scrollTop = el.scrollHeight - fromBottom;
  } else {
    const fresh = messageEl(m, { compact: node.classList.contains('message-compact') });
    carryEdit(node, fresh);
    node.replaceWith(fresh);
    els.set(id, fresh);
  }
  if (atBottom) scrollToBottom();
}

// flash draws the eye to a message (a search result, a jump).
export function flash(el) {
  if (!el) return;
  el.classList.remove('flash');
  void el.offsetWidth;
  el.classList.add('flash');
  el.scrollIntoView({ block: 'center' });
  stick = nearBottom();
}

// jumpTo shows message id of the open room in context: loaded already,
// after loading a few older pages, or — further back — in a page around it
// (the room's view then starts there; "Back to the latest" returns).
export async function jumpTo(name, id) {
  if (room !== name) return false;
  const deadline = Date.now() + 15000;
  let pages = 0;
  for (;;) {
    const log = logFor(name);
    if (log.byId.has(id) || room !== name || Date.now() >= deadline) break;
    if (log.loading) { await log.loading; continue; } // the page being read
    if (!log.loaded) { await loadLatest(name); continue; }
    if (id > log.newest && !log.detached) break; // not in the channel (a reply)
    if (id > log.newest || (id < log.oldest && !log.reachedStart && pages >= BACK_PAGES)) {
      await showAround(name, id);
      break;
    }
    if (log.reachedStart || id > log.oldest) break;
    pages++;
    try {
      if (addPage(log, await fetchPage(log, name, { before: log.oldest, limit: 200 })).length < 200) log.reachedStart = true;
    } catch { break; }
    if (room === name) renderAll();
  }
  if (room !== name) return false;
  const el = els.get(id);
  if (!el) return false;
  flash(el);
  return true;
}

// fetchPage reads a page of a room's messages. Meanwhile log.loading is a
// promise that settles (never rejects) when the read ends: whoever needs
// the log loaded waits on it.
async function fetchPage(log, name, query, early = false) {
  const reading = early ? takeEarly(`page ${name} ${query.limit}`, () => api.messages(name, query)) : api.messages(name, query);
  log.loading = reading.then(() => {}, () => {});
  try {
    return await reading;
  } finally {
    log.loading = false;
  }
}

// addPage puts a page's messages and receipts into log and returns the
// messages.
export function addPage(log, d) {
  const ms = d.messages || [];
  for (const m of ms) log.add(m);
  for (const r of d.receipts || []) mergeReceipt(r);
  return ms;
}

// showAround replaces the room's view with the page around message id.
async function showAround(name, id) {
  const log = new RoomLog();
  log.loading = true;
  let d;
  try {
    d = await api.messages(name, { around: id, limit: AROUND });
  } catch (err) {
    errorText = `Could not load the message: ${err.message}`;
    if (room === name) setTopIndicator();
    return;
  }
  const ms = addPage(log, d);
  log.loaded = true;
  log.loading = false;
  log.reachedStart = ms.filter((m) => m.id < id).length < AROUND / 2;
  log.detached = ms.filter((m) => m.id >= id).length >= AROUND - AROUND / 2;
  state.logs.set(name, log);
  if (room !== name) return;
  renderAll();
  showJump();
}

// backToLatest leaves a page from the middle for the newest messages.
async function backToLatest() {
  const name = room;
  if (!name) return;
  state.logs.set(name, new RoomLog());
  renderAll();
  await loadLatest(name);
}

// loadNewer reads the page after a detached view's newest message; once a
// page comes back short the view is the latest again.
async function loadNewer() {
  const name = room;
  if (!name) return;
  const log = logFor(name);
  if (log.loading || !log.detached) return;
  try {
    const d = await fetchPage(log, name, { after: log.newest, limit: PAGE });
    log.detached = false;
    const ms = addPage(log, d);
    // Short: the latest, unless a message arrived live meanwhile that the
    // page did not have.
    log.detached = ms.length >= PAGE || log.skipped > log.newest;
  } catch (err) {
    errorText = `Could not load newer messages: ${err.message}`;
  }
  if (room !== name) return;
  const el = list();
  const top = el.scrollTop;
  renderAll();
  el.scrollTop = top;
  showJump();
}

// showJump offers the newest messages: below, or (detached) to load.
function showJump() {
  const detached = room && logFor(room).detached;
  jump().textContent = detached ? 'Back to the latest ↓' : 'New messages ↓';
  jump().hidden = !detached && nearBottom();
}

export async function showRoom(name) {
  room = name;
  errorText = '';
  jump().hidden = true;
  if (logFor(name).detached) state.logs.set(name, new RoomLog()); // a room opens at its latest
  const log = logFor(name);
  renderAll();
  scrollToBottom();
  if (!log.loaded) await loadLatest(name);
  else readIfAtBottom();
}

export function clearMessages() {
  room = null;
  els = new Map();
  lastShown = null;
  group = null;
  clear(list());
}

async function loadLatest(name) {
  const log = logFor(name);
  if (log.loading) return;
  try {
    if (addPage(log, await fetchPage(log, name, { limit: PAGE }, true)).length < PAGE) log.reachedStart = true;
    log.loaded = true;
    errorText = '';
  } catch (err) {
    errorText = `Could not load messages: ${err.message}`;
  }
  if (room !== name) return;
  renderAll();
  scrollToBottom();
  readIfAtBottom();
  fillViewport();
}

async function loadOlder() {
  const name = room;
  if (!name) return;
  const log = logFor(name);
  if (log.loading || log.reachedStart || !log.loaded) return;
  const reading = fetchPage(log, name, { before: log.oldest, limit: PAGE });
  setTopIndicator(); // shows the log loading
  try {
    if (addPage(log, await reading).length < PAGE) log.reachedStart = true;
  } catch (err) {
    errorText = `Could not load older messages: ${err.message}`;
  }
  if (room !== name) return;
  const el = list();
  const fromBottom = el.scrollHeight - el.scrollTop;
  renderAll();
  el.scrollTop = el.scrollHeight - fromBottom;
  fillViewport();
}

// Keep loading older pages until the list can scroll.
function fillViewport() {
  const el = list();
  const log = room && logFor(room);
  if (log && log.loaded && !log.reachedStart && el.scrollHeight <= el.clientHeight + 40) loadOlder();
}

function onScroll() {
  const el = list();
  // Scrolls we made ourselves keep the list pinned; the reader's own decide.
  if (el.scrollTop !== ourTop) stick = nearBottom();
  if (el.scrollTop < 300) loadOlder();
  if (nearBottom()) {
    if (room && logFor(room).detached) { loadNewer(); return; }
    jump().hidden = true;
    readIfAtBottom();
  }
}

function nearBottom() {
  const el = list();
  return el.scrollHeight - el.scrollTop - el.clientHeight < 80;
}

function scrollToBottom() {
  const el = list();
  el.scrollTop = el.scrollHeight;
  ourTop = el.scrollTop;
  stick = true;
  if (!(room && logFor(room).detached)) jump().hidden = true;
}

function readIfAtBottom() {
  if (!room || document.hidden || !nearBottom()) return;
  const log = logFor(room);
  if (log.detached) return; // the bottom of a page from the middle is not the newest
  if (log.newest) markRead(room, log.newest);
}

function topIndicator() {
  const log = logFor(room);
  if (errorText) {
    return h('div', { class: 'history-note history-error', role: 'alert' }, errorText, ' ',
      h('button', { type: 'button', class: 'link-button', onclick: () => { errorText = ''; log.loaded ? loadOlder() : loadLatest(room); } }, 'Retry'));
  }
  if (!log.loaded || log.loading) return h('div', { class: 'history-note history-loading' }, h('span', { class: 'spinner', 'aria-hidden': 'true' }), ' Loading messages…');
  if (log.reachedStart && log.ids.length) {
    return h('div', { class: 'history-note history-start' },
      h('strong', null, roomLabel(state.rooms.get(room)) || room), h('br'), 'This is the very beginning of the conversation.');
  }
  return h('div', { class: 'history-note' });
}

function setTopIndicator() {
  const el = list();
  const first = el.firstElementChild;
  const ind = topIndicator();
  ind.classList.add('history-top');
  if (first && first.classList.contains('history-top')) first.replaceWith(ind);
  else el.prepend(ind);
}

function grouped(prev, m) {
  if (!prev || prev.authorKind === 'system' || m.authorKind === 'system') return false;
  if (prev.author !== m.author || prev.authorKind !== m.authorKind) return false;
  if (dayKey(prev.createdAt) !== dayKey(m.createdAt)) return false;
  return new Date(m.createdAt) - new Date(prev.createdAt) < GROUP_MS;
}

function renderAll() {
  const el = list();
  clear(el);
  els = new Map();
  lastShown = null;
  group = null;
  if (!room) return;
  const log = logFor(room);
  setTopIndicator();
  const ms = log.messages();
  if (log.loaded && !ms.length && !errorText) {
    el.append(h('div', { class: 'empty-messages', dataset: { testid: 'messages-empty' } },
      h('p', { class: 'empty-title' }, 'No messages yet — say hi'),
      h('p', null, 'Mention a person with @name or an agent with @owner/agent.')));
    return;
  }
  for (const m of ms) appendEl(m);
}

function appendEl(m) {
  const el = list();
  if (!lastShown || dayKey(lastShown.createdAt) !== dayKey(m.createdAt)) { el.append(daySeparator(m.createdAt)); group = null; }
  if (isActivity(m)) {
    if (!group || !group.accepts(m) || lastShown !== lastActivity) {
      group = new ActivityGroup(m, { compact: grouped(lastShown, m) });
      el.append(group.el);
    }
    els.set(m.id, group.add(m));
    lastShown = lastActivity = m;
    return;
  }
  group = null;
  const node = messageEl(m, { compact: grouped(lastShown, m) });
  el.append(node);
  els.set(m.id, node);
  lastShown = m;
}

// The live feed is (back) up: if the open room's first page failed to load
// (the hub was down), load it now rather than waiting for Retry.
export function feedReady() {
  if (!room) return;
  const log = logFor(room);
  if (log.loaded || log.loading) return;
  errorText = '';
  loadLatest(room);
}

// A message arrived live (already added to its room's log).
export function messageArrived(m) {
  if (m.room !== room) return;
  const log = logFor(room);
  if (!log.loaded) return; // the first page will include it
  const mine = m.authorKind === 'user' && m.author === state.me?.name;
  if (log.detached) {
    // Not kept: the view is a page from the middle. One's own message
    // brings the latest back; others' are waiting below.
    if (mine) backToLatest(); else showJump();
    return;
  }
  const atBottom = stick || nearBottom();
  const empty = list().querySelector('.empty-messages');
  if (empty) { renderAll(); }
  else if (!lastShown || m.id > lastShown.id) appendEl(m);
  else {
    const el = list();
    const fromBottom = el.scrollHeight - el.scrollTop;
    renderAll();
    el.scrollTop = el.scrollHeight - fromBottom;
  }
  if (atBottom || mine) {
    scrollToBottom();
    readIfAtBottom();
  } else {
    showJump();
  }
}

export function receiptChanged(r) {
  const node = els.get(r.messageId);
  if (!node) return;
  const ul = node.querySelector('.receipts');
  if (!ul) return;
  const atBottom = stick || nearBottom();
  renderReceipts(ul, r.messageId);
  if (atBottom) scrollToBottom();
  announce(`@${r.agent}: ${receiptText(r)}`);
}

// agentChanged refreshes the receipts of an agent's mentions in the open
// room ("working" becomes "waiting for approval" and back).
export function agentChanged(handle) {
  for (const [id, node] of els) {
    const ul = node.querySelector('.receipts');
    if (ul && receiptsFor(id).some((r) => r.agent === handle)) renderReceipts(ul, id);
  }
}

// The open room's message list after a re-render request (e.g. me changed).
export function rerender() {
  if (!room) return;
  const atBottom = stick || nearBottom();
  renderAll();
  if (atBottom) scrollToBottom();
}

