// app.js — start-up, routing (#/r/<room>) and the live event dispatch.

import { api, setUnauthenticatedHandler, setLive, askEarly, takeEarly } from './api.js';
import { h, clear, toast, debounce } from './dom.js';
import { state, on, emit, logFor, threadLog, mergeReceipt, patchAgent, isDM } from './store.js';
import { applyChatEvent } from './chatevents.js';
import { actions } from './actions.js';
import { Live } from './live.js';
import { showLogin, showSetup, showReset, hideAuth } from './auth.js';
import { initSidebar, renderMe, roomHref } from './sidebar.js';
import { loadUnread, primeUnread, seenRoom, noteIncoming, forgetRoom, initUnread, applyRead } from './unread.js';
import { PAGE, initMessages, showRoom, clearMessages, messageArrived, receiptChanged, rerender, feedReady, agentChanged } from './messages.js';
import { initComposer, showComposer, resetComposer } from './composer.js';
import { renderHeader, openCreateRoom, openBrowse, openMembers, openStartDM } from './rooms.js';
import { initAgents, loadRoomAgents, loadAllAgents } from './agents.js';
import { initApprovals, loadApprovals, upsertApproval } from './approvals.js';
import { loadInvitations, upsertInvitation } from './invitations.js';
import { initPanel } from './panel.js';
import { openPairing } from './pairing.js';
import { openTokens } from './tokens.js';
import { openAdmin } from './admin.js';
import { showJoinOffer, hideJoinOffer } from './join.js';
import { initWelcome, loadWelcome } from './welcome.js';
import { initThread, closeThread } from './thread.js';
import { initReactions } from './reactions.js';
import { initEdit } from './edit.js';
import { initUploads, loadUploadLimits, resetUploads } from './uploads.js';
import { forgetAllFiles } from './requests.js';
import { initSearch } from './search.js';
import { initNotify, loadNotify, primeNotify, setLevelFromHub, resetNotify } from './notify.js';
import { openPeople } from './people.js';
import { openAccount } from './account.js';
import { initOwner, loadOwner, ownerEvent } from './owner.js';

let live = null;
let initialized = false;

setUnauthenticatedHandler(() => sessionLost('Your session ended. Log in again.'));

// A reset link an admin handed over: #reset=<code>.
function resetCode() {
  const m = /^#reset=(whr_[A-Za-z0-9_-]+)$/.exec(location.hash);
  return m ? m[1] : '';
}

async function boot() {
  const code = resetCode();
  if (code) {
    // The code leaves the address bar (and history) at once.
    history.replaceState(null, '', '#/');
    showReset(code, start, () => showLogin(start));
    return;
  }
  const m = /^#\/r\/(.+)$/.exec(location.hash);
  let room = null;
  try { room = m ? decodeURIComponent(m[1]) : null; } catch { room = null; }
  askEarly(room, PAGE);
  try {
    start(await api.me());
  } catch (ex) {
    if (ex.status === 401) {
      let needed = false;
      try { needed = await api.setupNeeded(); } catch { needed = false; }
      if (needed) showSetup(start); else showLogin(start);
      return;
    }
    const el = document.getElementById('boot');
    clear(el).append(h('p', null, `Cannot reach the hub: ${ex.message}`),
      h('button', { type: 'button', class: 'primary-button', onclick: () => { el.textContent = 'Loading Wheelhouse…'; boot(); } }, 'Retry'));
  }
}

function initOnce() {
  if (initialized) return;
  initialized = true;
  initSidebar({
    onLogout: logout, onPairing: openPairing, onTokens: openTokens, onAdmin: openPeople, onAccount: openAccount,
    onCreateRoom: openCreateRoom, onBrowse: openBrowse, onStartDM: openStartDM,
  });
  initMessages();
  initComposer();
  initAgents();
  initApprovals();
  initPanel();
  initWelcome();
  initNotify();
  initThread();
  initReactions();
  initEdit();
  initUnread();
  initUploads();
  initSearch();
  initOwner();
  document.getElementById('members-button').addEventListener('click', openMembers);
  window.addEventListener('hashchange', route);
  on('message', onMessage);
  on('receipt', receiptChanged);
  actions.refreshRooms = refreshRooms;
  actions.go = go;
}

async function start(me) {
  state.me = me;
  initOnce();
  hideAuth();
  document.getElementById('boot').hidden = true;
  document.getElementById('app-screen').hidden = false;
  renderMe();
  loadUnread();
  let rooms = [];
  try {
    [rooms, state.users] = await Promise.all([takeEarly('rooms', api.rooms), takeEarly('users', api.users)]);
  } catch (ex) {
    if (ex.status === 401) return;
    toast(`Could not load your rooms: ${ex.message}`, 'error');
  }
  setRooms(rooms);
  loadNotify();
  const since = rooms.reduce((m, r) => Math.max(m, r.lastMessageId || 0), 0);
  live = new Live({
    since,
    onEvent,
    onReady: ({ first }) => { feedReady(); if (!first) { refreshRooms(); if (state.current) loadRoomAgents(state.current); } },
    onUnauthenticated: (why) => sessionLost(endedNotice(why)),
  });
  live.start();
  setLive(live); // posts go over its socket while it is up
  primeUnread(rooms);
  // The room opens now; what the rest of the page shows (agents, the Inbox,
  // approvals, the welcome card, upload limits, this device) loads beside
  // it, and the room's view is drawn again once that is in.
  const rest = Promise.all([loadAllAgents(), loadInvitations(), loadApprovals(), loadWelcome(), loadUploadLimits(), loadOwner()]);
  route();
  await rest;
  primeNotify();
  if (state.current) { renderHeader(); emit('current'); rerender(); }
}

function setRooms(rooms) {
  state.rooms = new Map(rooms.map((r) => [r.name, r]));
  for (const r of rooms) seenRoom(r);
  emit('rooms');
}

async function refreshRooms() {
  try {
    setRooms(await api.rooms());
  } catch { return; }
  if (state.current && !state.rooms.has(state.current)) go(null);
  else renderHeader();
}
const refreshRoomsSoon = debounce(refreshRooms, 250);

async function loadMembers(room) {
  if (!state.rooms.has(room)) return;
  try { state.members.set(room, await api.members(room)); } catch { /* autocomplete falls back to all users */ }
}
const reloadMembersSoon = debounce((room) => loadMembers(room), 250);
const reloadAgentsSoon = debounce((room) => { if (state.rooms.has(room)) loadRoomAgents(room); }, 400);

function go(name) {
  const target = name ? roomHref(name) : '#/';
  if (location.hash === target) route(); else location.hash = target;
}

function route() {
  if (!state.me) return;
  const m = /^#\/r\/(.+)$/.exec(location.hash);
  let name = m ? decodeURIComponent(m[1]) : null;
  hideJoinOffer();
  if (name && !state.rooms.has(name)) {
    openRoom(null);
    showJoinOffer(name); // never another room in its place
    return;
  }
  if (!name) {
    const last = localStorage.getItem(`wh.lastRoom.${state.me.name}`);
    const rooms = [...state.rooms.values()];
    const pick = (last && state.rooms.get(last)) || rooms.find((r) => !isDM(r)) || rooms[0];
    if (pick) { history.replaceState(null, '', roomHref(pick.name)); name = pick.name; }
  }
  openRoom(name);
}

function openRoom(name) {
  const changed = state.current !== name;
  state.current = name;
  if (name) { try { localStorage.setItem(`wh.lastRoom.${state.me.name}`, name); } catch { /* ignore */ } }
  const has = !!name;
  document.querySelector('.messages-wrap').hidden = !has;
  document.getElementById('room-empty').hidden = has;
  if (!has) renderNoRooms();
  renderHeader();
  showComposer(name);
  emit('current');
  if (!has) { clearMessages(); return; }
  if (changed) showRoom(name); else rerender();
  loadRoomAgents(name);
  loadMembers(name);
}

function renderNoRooms() {
  clear(document.getElementById('room-empty')).append(
    h('div', { class: 'empty-card' },
      h('p', { class: 'empty-title' }, 'No rooms yet — create one'),
      h('p', { class: 'muted' }, 'Rooms are where your team and its agents talk. Create one, or browse the public rooms.'),
      h('div', { class: 'empty-actions' },
        h('button', { id: 'empty-create-room', type: 'button', class: 'primary-button', onclick: openCreateRoom }, 'Create a room'),
        h('button', { id: 'empty-browse', type: 'button', class: 'ghost-button', onclick: openBrowse }, 'Browse rooms'))));
}

function onMessage(m) {
  messageArrived(m);
  const r = state.rooms.get(m.room);
  if (r && m.id > (r.lastMessageId || 0)) r.lastMessageId = m.id;
  if (m.room !== state.current || document.hidden) noteIncoming(m.room, m);
}

function onEvent(ev) {
  const d = ev.data || {};
  const room = ev.room || d.room;
  switch (ev.type) {
    case 'message': {
      const m = { ...d, room: d.room || ev.room, id: d.id ?? ev.id };
      if (!state.rooms.has(m.room)) refreshRoomsSoon();
      if (m.thread) { if (threadLog(m.thread).add(m)) emit('reply', m); break; }
      if (logFor(m.room).add(m)) emit('message', m);
      break;
    }
    case 'room.created':
      refreshRoomsSoon();
      break;
    case 'room.topic': {
      const r = state.rooms.get(d.room || room);
      if (r) { r.topic = d.topic || ''; if (r.name === state.current) renderHeader(); }
      break;
    }
    case 'member.added':
    case 'member.removed':
      if (ev.type === 'member.removed' && d.user === state.me.name && state.rooms.has(room)) {
        state.rooms.delete(room);
        forgetRoom(room);
        if (d.by && d.by !== state.me.name) toast(`@${d.by} removed you from #${room}`);
        if (state.current === room) go(null);
        emit('rooms');
      }
      refreshRoomsSoon();
      if (room === state.current) reloadMembersSoon(room);
      break;
    case 'receipt':
      if (mergeReceipt(d)) emit('receipt', d);
      break;
    case 'agent.status':
      if (patchAgent(d.handle, { status: d.status, turnId: d.turnId || '', steeredBy: d.steeredBy || [] })) emit('agents', { room: state.current });
      agentChanged(d.handle);
      if (state.current) reloadAgentsSoon(state.current); // mode for the caller follows the status
      break;
    case 'agent.added':
    case 'agent.removed':
      if (room === state.current) loadRoomAgents(room);
      else state.roomAgents.delete(room);
      break;
    case 'invitation':
      upsertInvitation(d);
      if (d.status === 'accepted' && d.room === state.current) loadRoomAgents(d.room);
      break;
    case 'approval':
      upsertApproval(d);
      break;
    case 'notify':
      setLevelFromHub(d.room || room, d.level);
      break;
    case 'read':
      applyRead({ ...d, room: d.room || room });
      break;
    default:
      if (!ownerEvent(ev)) applyChatEvent(ev);
      break;
  }
}

// endedNotice words the hub's close reason ("session ended: your password
// was changed") for the login screen.
function endedNotice(why) {
  if (!why) return 'Your session ended. Log in again.';
  const text = String(why).replace(/^session ended:\s*/, '');
  return `Your session ended: ${text}. Log in again.`;
}

function stopLive() {
  if (live) { live.stop(); live = null; }
  setLive(null);
}

async function logout() {
  stopLive();
  try { await api.logout(); } catch { /* the session is gone either way */ }
  sessionLost('You are logged out.');
}

function sessionLost(notice) {
  stopLive();
  if (!state.me) return;
  state.me = null;
  state.current = null;
  state.rooms = new Map();
  state.logs = new Map();
  state.threads = new Map();
  state.receipts = new Map();
  state.members = new Map();
  state.roomAgents = new Map();
  state.approvals = new Map();
  state.invitations = new Map();
  state.requests = new Map();
  forgetAllFiles();
  state.allAgents = [];
  clearMessages();
  resetComposer();
  resetNotify();
  closeThread();
  resetUploads();
  document.querySelectorAll('dialog[open]').forEach((d) => d.close());
  history.replaceState(null, '', '#/');
  showLogin(start, notice);
}

boot();
