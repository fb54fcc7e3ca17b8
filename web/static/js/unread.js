// unread.js — last-read message id per room in localStorage, unread counts.

import { api } from './api.js';
import { state, emit } from './store.js';

const MAX = 50;
let lastRead = {};
let key = '';
const counts = new Map(); // room → number (MAX+1 means "50+")

export function loadUnread() {
  key = `wh.lastRead.${state.me.name}`;
  try { lastRead = JSON.parse(localStorage.getItem(key) || '{}') || {}; } catch { lastRead = {}; }
  counts.clear();
}

function save() {
  try { localStorage.setItem(key, JSON.stringify(lastRead)); } catch { /* private mode: counts stay in memory */ }
}

export function lastReadOf(room) { return lastRead[room] || 0; }

export function unreadCount(room) { return counts.get(room) || 0; }

export function unreadLabel(room) {
  const n = unreadCount(room);
  return n > MAX ? `${MAX}+` : String(n);
}

export function totalUnread() {
  let t = 0;
  for (const n of counts.values()) t += n;
  return t;
}

// A room seen for the first time starts as read; then count what arrived
// since the last visit (one request per room with something new).
export async function primeUnread(rooms) {
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
export function seenRoom(room) {
  if (!(room.name in lastRead)) { lastRead[room.name] = room.lastMessageId || 0; save(); }
}

export function noteIncoming(room, msg) {
  if (msg.id <= lastReadOf(room)) return;
  if (msg.authorKind === 'user' && msg.author === state.me.name) { markRead(room, msg.id); return; }
  counts.set(room, Math.min((counts.get(room) || 0) + 1, MAX + 1));
  emit('unread');
}

export function markRead(room, id) {
  const had = counts.get(room);
  if (id > lastReadOf(room)) { lastRead[room] = id; save(); }
  if (had) { counts.delete(room); emit('unread'); }
}

export function forgetRoom(room) {
  counts.delete(room);
  emit('unread');
}
