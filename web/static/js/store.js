// store.js — the client's state and a small event bus. Modules read state
// directly and re-render on the events they care about.

export const state = {
  me: null,                 // {id, name, display, admin}
  users: [],                // every user (for mentions and DMs)
  rooms: new Map(),         // name → Room (the caller's rooms and DMs)
  current: null,            // name of the open room
  logs: new Map(),          // name → RoomLog (the channel: messages not in a thread)
  threads: new Map(),       // root id → RoomLog (the thread's replies)
  receipts: new Map(),      // messageId → Map(agent handle → Receipt)
  members: new Map(),       // room → [{user, role}]
  roomAgents: new Map(),    // room → [Agent]
  allAgents: [],            // GET /agents
  approvals: new Map(),     // id → Approval
  invitations: new Map(),   // id → Invitation
  requests: new Map(),      // steerId → Request (moderated mentions)
  // Feature availability: null unknown, true present, false (404) not on this hub yet.
  features: { agents: null, approvals: null, invitations: null, requests: null },
};

const bus = new EventTarget();
export function on(type, fn) {
  bus.addEventListener(type, (e) => fn(e.detail || {}));
}
export function emit(type, detail) {
  bus.dispatchEvent(new CustomEvent(type, { detail }));
}
// next resolves with the next event of type (or with null after ms).
export function next(type, ms) {
  return new Promise((resolve) => {
    const fn = (e) => { clearTimeout(timer); resolve(e.detail || {}); };
    const timer = setTimeout(() => { bus.removeEventListener(type, fn); resolve(null); }, ms);
    bus.addEventListener(type, fn, { once: true });
  });
}

// RoomLog holds one room's loaded messages, ordered by id.
export class RoomLog {
  constructor() {
    this.byId = new Map();
    this.ids = [];
    this.loaded = false;       // the newest page was fetched
    this.reachedStart = false; // nothing older exists
    // detached: a page from the middle of the history (a jump far back);
    // newer messages exist that are not loaded. The log stays one unbroken
    // run: a newer message arriving live is not kept (skipped notes the
    // newest such id), the view offers the latest instead.
    this.detached = false;
    this.skipped = 0;
    this.loading = false;      // or, while a page is read, a promise that settles when it is
  }
  // add returns true if the message is new to this log (or, detached, newer
  // than it and not kept).
  add(m) {
    if (this.byId.has(m.id)) {
      this.byId.set(m.id, m);
      return false;
    }
    if (this.detached && this.ids.length && m.id > this.newest) {
      this.skipped = Math.max(this.skipped, m.id);
      return true;
    }
    this.byId.set(m.id, m);
    const ids = this.ids;
    if (!ids.length || m.id > ids[ids.length - 1]) ids.push(m.id);
    else {
      let i = ids.length;
      while (i > 0 && ids[i - 1] > m.id) i--;
      ids.splice(i, 0, m.id);
    }
    return true;
  }
  get oldest() { return this.ids[0] || 0; }
  get newest() { return this.ids[this.ids.length - 1] || 0; }
  messages() { return this.ids.map((id) => this.byId.get(id)); }
}

export function logFor(room) {
  let log = state.logs.get(room);
  if (!log) state.logs.set(room, (log = new RoomLog()));
  return log;
}

export function threadLog(root) {
  let log = state.threads.get(root);
  if (!log) state.threads.set(root, (log = new RoomLog()));
  return log;
}

// logOf is the log a message belongs in: its thread's, or its room's channel.
export function logOf(m) {
  return m.thread ? threadLog(m.thread) : logFor(m.room);
}

// findMessage looks a message up wherever it is loaded.
export function findMessage(id, room) {
  if (room && state.logs.get(room)?.byId.has(id)) return state.logs.get(room).byId.get(id);
  for (const log of [...state.logs.values(), ...state.threads.values()]) if (log.byId.has(id)) return log.byId.get(id);
  return null;
}

// Receipt statuses by progress: a later stage never yields to an earlier one
// (the turn's outcome — done, failed, interrupted — comes last).
const RANK = { held: 0, pending: 0, queued: 1, started: 2, steered: 2, delivered: 2, expired: 3, rejected: 3, done: 3, failed: 3, interrupted: 3 };

// mergeReceipt stores r and reports whether it changed what we show.
export function mergeReceipt(r) {
  if (!r || !r.messageId) return false;
  let m = state.receipts.get(r.messageId);
  if (!m) state.receipts.set(r.messageId, (m = new Map()));
  const key = r.agent || r.steerId;
  const old = m.get(key);
  if (old) {
    const ro = RANK[old.status] ?? 1;
    const rn = RANK[r.status] ?? 1;
    if (rn < ro) return false;
    if (rn === ro && old.at && r.at && new Date(r.at) < new Date(old.at)) return false;
    if (old.status === r.status && old.reason === r.reason && old.turnId === r.turnId && old.detail === r.detail) return false;
  }
  // How the bridge took the words (a teammate's, and why) stays with the
  // receipt as it moves on to the turn's outcome.
  const teammate = TEAMMATE.test(r.detail || '') ? r.detail : old && old.teammate;
  m.set(key, teammate ? { ...r, teammate } : r);
  return true;
}

// The start of a receipt's detail when the bridge took words labelled as
// the owner's as a teammate's (unsigned, or a signature that did not verify).
const TEAMMATE = /^Treated as a teammate/;

export function receiptsFor(messageId) {
  const m = state.receipts.get(messageId);
  return m ? [...m.values()] : [];
}

// Display names.
export function isDM(room) {
  return room && (room.kind === 'dm' || String(room.name).startsWith('dm:'));
}

export function roomLabel(room) {
  if (!room) return '';
  if (isDM(room)) {
    const peers = room.peers && room.peers.length ? room.peers
      : String(room.name).replace(/^dm:/, '').split(/[:,]/).filter((p) => p !== state.me?.name);
    return peers.length ? peers.map((p) => '@' + p).join(', ') : '@' + (state.me?.name || '') + ' (you)';
  }
  return '#' + room.name;
}

export function agentOwner(handle) {
  return String(handle || '').replace(/^@/, '').split('/')[0];
}

export function isMine(handle) {
  return !!state.me && agentOwner(handle) === state.me.name;
}

// agentByHandle finds an agent in what the client knows.
export function agentByHandle(handle) {
  for (const list of [state.allAgents, ...state.roomAgents.values()]) {
    const a = list.find((x) => x.handle === handle);
    if (a) return a;
  }
  return null;
}

// Update an agent (from agent.status) wherever it appears.
// Live agent changes (agent.status events and the caller's own edits),
// newest last: a list fetched while one arrived is older than it.
let liveN = 0;
const live = new Map(); // handle → {n, fields}

// liveMark is where the live changes stand now; liveSince applies to a
// fetched list the changes that arrived after mark.
export function liveMark() { return liveN; }
export function liveSince(list, mark) {
  for (const a of list) {
    const l = live.get(a.handle);
    if (l && l.n > mark) Object.assign(a, l.fields);
  }
  return list;
}

export function patchAgent(handle, fields) {
  const prev = live.get(handle);
  live.set(handle, { n: ++liveN, fields: { ...(prev ? prev.fields : {}), ...fields } });
  let changed = false;
  for (const list of [...state.roomAgents.values(), state.allAgents]) {
    for (const a of list) {
      if (a.handle === handle) { Object.assign(a, fields); changed = true; }
    }
  }
  return changed;
}
