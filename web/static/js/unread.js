// unread.js — unread and mention counts per room. The hub keeps a read
// marker per person and room (GET /rooms carries lastRead, unread and
// mentions; PUT /rooms/{room}/read moves it; a "read" event tells the
// person's other browsers), so the counts follow you from laptop to phone.
// A hub without read markers: the last-read id per room in localStorage.

import { api } from './api.js';
import { state, emit, on, isDM } from './store.js';

const MAX = 50;        // the local fallback counts up to this
const SERVER_MAX = 999; // the hub caps at 1000: "999+"
let lastRead = {};
let key = '';
const counts = new Map(); // local fallback: room → number (MAX+1 means "50+")
let server = false;       // the hub keeps read markers
const sending = new Map(); // room → {id, timer}

export function loadUnread() {
  key = `wh.lastRead.${state.me.name}`;
  try { lastRead = JSON.parse(localStorage.getItem(key) || '{}') || {}; } catch { lastRead = {}; }
  counts.clear();
  server = false;
}

export function initUnread() {
  on('reply', (m) => noteReply(m));
}

function save() {
  try { localStorage.setItem(key, JSON.stringify(lastRead)); } catch { /* private mode: counts stay in memory */ }
}

const room = (name) => state.rooms.get(name);

export function lastReadOf(name) {
  if (server) return room(name)?.lastRead || 0;
  return lastRead[name] || 0;
}

export function unreadCount(name) {
  if (server) { const r = room(name); return r ? (r.unread || 0) + (r.unread ? 0 : r.mentions || 0) : 0; }
  return counts.get(name) || 0;
}

export function mentionCount(name) {
  return server ? room(name)?.mentions || 0 : 0;
}

export function unreadLabel(name) {
  if (server) {
    const r = room(name);
    const n = r ? (r.mentions || r.unread || 0) : 0;
    return n > SERVER_MAX ? `${SERVER_MAX}+` : String(n);
  }
  const n = unreadCount(name);
  return n > MAX ? `${MAX}+` : String(n);
}

export function totalUnread() {
  let t = 0;
  if (server) { for (const r of state.rooms.values()) t += r.unread || 0; return t; }
  for (const n of counts.values()) t += n;
  return t;
}

// primeUnread: with the hub's counts, nothing to do; otherwise a room seen
// for the first time starts as read, then count what arrived since the last
// visit (one request per room with something new).
export async function primeUnread(rooms) {
  server = rooms.some((r) => typeof r.unread === 'number');
  if (server) { emit('unread'); return; }
  const jobs = [];
  for (const r of rooms) {
    if (!(r.name in lastRead)) { lastRead[r.name] = r.lastMessageId || 0; continue; }
    if ((r.lastMessageId || 0) > lastRead[r.name]) jobs.push(r);
  }
  save();
  await Promise.all(jobs.map(async (r) => {
    try {
      const d = await api.messages(r.name, { after: lastRead[r.name], limit: MAX + 1 });
      const n = (d.messages || []).filter((m) => !(m.authorKind === 'user' && m.author === state.me.name)).length;
      counts.set(r.name, n);
    } catch { /* the room may have vanished; leave it read */ }
  }));
  emit('unread');
}

// A room that appears during the session: its history so far is read.
export function seenRoom(r) {
  if (typeof r.unread === 'number') server = true;
  if (server) return;
  if (!(r.name in lastRead)) { lastRead[r.name] = r.lastMessageId || 0; save(); }
}

const mine = (m) => m.authorKind === 'user' && m.author === state.me?.name;
const mentionsMe = (m) => (m.mentions || []).some((x) => x.kind === 'user' && x.user === state.me?.name);

// noteIncoming counts a channel message that arrived while its room was
// not being read.
export function noteIncoming(name, msg) {
  if (msg.id <= lastReadOf(name)) return;
  if (mine(msg)) { markRead(name, msg.id); return; }
  if (server) {
    const r = room(name);
    if (!r) return;
    r.unread = (r.unread || 0) + 1;
    if (mentionsMe(msg) || isDM(r)) r.mentions = (r.mentions || 0) + 1;
    emit('unread');
    return;
  }
  counts.set(name, Math.min((counts.get(name) || 0) + 1, MAX + 1));
  emit('unread');
}

// A thread reply counts when it mentions you (the hub counts the same).
function noteReply(m) {
  if (!server || mine(m) || m.id <= lastReadOf(m.room)) return;
  const r = room(m.room);
  if (!r || !(mentionsMe(m) || isDM(r))) return;
  r.mentions = (r.mentions || 0) + 1;
  emit('unread');
}

// markRead: everything up to id in the room was seen.
export function markRead(name, id) {
  if (server) {
    const r = room(name);
    if (!r) return;
    const had = r.unread || r.mentions;
    if (id > (r.lastRead || 0)) { r.lastRead = id; send(name, id); }
    if (had) { r.unread = 0; r.mentions = 0; emit('unread'); }
    return;
  }
  const had = counts.get(name);
  if (id > lastReadOf(name)) { lastRead[name] = id; save(); }
  if (had) { counts.delete(name); emit('unread'); }
}

// send moves the hub's marker, at most a few times a second per room.
function send(name, id) {
  const s = sending.get(name);
  if (s) { s.id = Math.max(s.id, id); return; }
  const entry = { id };
  sending.set(name, entry);
  entry.timer = setTimeout(async () => {
    sending.delete(name);
    try { applyRead(await api.markRead(name, entry.id)); } catch { /* the next read moves it */ }
  }, 300);
}

// applyRead takes the hub's word for a room's read state ("read" events
// from the person's other browsers, and the answer to our own PUT).
export function applyRead(d) {
  if (!d || !d.room) return;
  server = true;
  const r = room(d.room);
  if (!r) return;
  if ((d.lastRead || 0) < (r.lastRead || 0)) return; // an older answer
  const same = r.lastRead === (d.lastRead || 0) && (r.unread || 0) === (d.unread || 0) && (r.mentions || 0) === (d.mentions || 0);
  Object.assign(r, { lastRead: d.lastRead || 0, unread: d.unread || 0, mentions: d.mentions || 0 });
  if (!same) emit('unread');
}

export function forgetRoom(name) {
  counts.delete(name);
  emit('unread');
}
