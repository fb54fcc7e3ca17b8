// api.js — the JSON API of docs/api.md, one function per endpoint.

export class ApiError extends Error {
  constructor(status, code, message, reason) {
    super(message);
    this.status = status;
    this.code = code;
    this.reason = reason || '';
  }
  // The endpoint does not exist on this hub (yet).
  get missing() { return this.status === 404 && /no API endpoint/.test(this.message); }
}

let onUnauthenticated = () => {};
export function setUnauthenticatedHandler(fn) { onUnauthenticated = fn; }

const enc = encodeURIComponent;

// failure is the ApiError for an answer with status and body data (its
// {"error":{code, message, reason}}), told to the unauthenticated handler
// on 401 unless quiet401.
function failure(status, data, statusText, fallback, quiet401) {
  const e = (data && data.error) || {};
  const err = new ApiError(status, e.code || `http_${status}`, e.message || statusText || fallback, e.reason);
  if (status === 401 && !quiet401) onUnauthenticated(err);
  return err;
}

async function request(method, path, body, { quiet401 = false, headers = {} } = {}) {
  const opts = { method, headers: { Accept: 'application/json', ...headers }, credentials: 'same-origin' };
  if (body !== undefined) {
    opts.headers['Content-Type'] = 'application/json';
    opts.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch('/api/v1' + path, opts);
  } catch {
    throw new ApiError(0, 'network', 'Cannot reach the hub. Check your connection and try again.');
  }
  if (res.status === 204) return null;
  let data = null;
  try { data = await res.json(); } catch { data = null; }
  if (!res.ok) throw failure(res.status, data, res.statusText, 'Request failed', quiet401);
  return data;
}

// upload sends bytes as they are (the hub sniffs their type).
async function upload(path, blob) {
  let res;
  try {
    res = await fetch('/api/v1' + path, { method: 'POST', body: blob, credentials: 'same-origin', headers: { Accept: 'application/json', 'Content-Type': 'application/octet-stream' } });
  } catch {
    throw new ApiError(0, 'network', 'Cannot reach the hub. Check your connection and try again.');
  }
  let data = null;
  try { data = await res.json(); } catch { data = null; }
  if (!res.ok) throw failure(res.status, data, res.statusText, 'Upload failed', false);
  return data;
}

// The live feed's socket (live.js), set while there is one: posts go over
// it, without an HTTP request each. api.js does not import live.js (live.js
// imports this module); app.js hands the socket over.
let live = null;
export function setLive(l) { live = l; }

// The first page's data is asked for at once when the page loads, beside
// GET /me, instead of one wave after another: the room list, the people,
// and the latest page of the room in the address. Each answer is taken
// once; a failure (no session yet, not a member) leaves the caller to ask
// again as usual, where its error is shown.
const early = new Map();
export function askEarly(room, limit) {
  early.set('rooms', get('/rooms', { quiet401: true }).then((d) => d.rooms || []));
  early.set('users', get('/users', { quiet401: true }).then((d) => d.users || []));
  if (room) early.set(`page ${room} ${limit}`, get(`/rooms/${enc(room)}/messages?limit=${limit}`, { quiet401: true }));
  for (const p of early.values()) p.catch(() => {});
}
// takeEarly answers what askEarly fetched for key, or else(); a failed
// early answer goes to else() too.
export function takeEarly(key, orElse) {
  const p = early.get(key);
  early.delete(key);
  return p ? p.catch(() => null).then((v) => v ?? orElse()) : orElse();
}

// idempotencyKey is a fresh random key (crypto.randomUUID needs a secure
// origin; getRandomValues does not).
function idempotencyKey() {
  const b = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}

// postMessage posts body to a room over the live socket when it is ready,
// else over HTTP. Both carry the same idempotency key, so a post the socket
// did not answer (it closed, or was busy with as many as the hub allows)
// goes again over HTTP and is stored once: never lost, never twice.
async function postMessage(room, body) {
  const key = idempotencyKey();
  const reply = live ? await live.request({ type: 'post', room, key, ...body }) : null;
  // 429: this socket has as many under way as the hub allows; 503: the
  // node is shutting down or cannot write now. The post did not run:
  // HTTP (maybe another node) takes it, with the same key.
  if (reply && reply.status !== 429 && reply.status !== 503) {
    if (reply.status >= 200 && reply.status < 300) return reply.data ?? null;
    throw failure(reply.status, { error: reply.error }, '', 'Request failed', false);
  }
  return request('POST', `/rooms/${enc(room)}/messages`, body, { headers: { 'Idempotency-Key': key } });
}

const get = (p, o) => request('GET', p, undefined, o);
const post = (p, b, o) => request('POST', p, b === undefined ? {} : b, o);
const del = (p) => request('DELETE', p);
const patch = (p, b) => request('PATCH', p, b);
const put = (p, b) => request('PUT', p, b);

// "owner/name" → "/agents/owner/name"
export function agentPath(handle) {
  const [owner, name] = String(handle).replace(/^@/, '').split('/');
  return `/agents/${enc(owner)}/${enc(name)}`;
}

export const api = {
  // Accounts
  setupNeeded: () => get('/setup', { quiet401: true }).then((d) => !!d.needed),
  setup: (token, name, password) => post('/setup', { token, name, password }, { quiet401: true }),
  login: (name, password) => post('/sessions', { name, password }, { quiet401: true }),
  logout: () => del('/sessions'),
  me: () => get('/me', { quiet401: true }).then((d) => d.user),
  users: () => get('/users').then((d) => d.users || []),
  createUser: (u) => post('/users', u),
  // → {token:"wht_…", label}; the token is shown once.
  createToken: (label) => post('/tokens', { label }),
  tokens: () => get('/tokens').then((d) => d.tokens || []),
  revokeToken: (id) => del(`/tokens/${enc(id)}`),
  // Sessions and passwords (your own).
  sessions: () => get('/sessions').then((d) => d.sessions || []),
  endSession: (id) => del(`/sessions/${enc(id)}`),
  changePassword: (current, password) => put('/me/password', { current, password }),
  // A reset code an admin gave you: sets the password and logs you in.
  redeemReset: (code, password) => post('/password-reset', { code, password }, { quiet401: true }),

  // People (admins): {active:false|true} deactivates or reactivates, {admin} grants or revokes.
  updateUser: (name, change) => patch(`/users/${enc(name)}`, change).then((d) => d.user),
  // → {code:"whr_…", expiresAt}; shown once.
  resetPassword: (name) => post(`/users/${enc(name)}/password-reset`, {}),

  // Rooms
  rooms: () => get('/rooms').then((d) => d.rooms || []),
  publicRooms: () => get('/rooms?public=1').then((d) => d.rooms || []),
  createRoom: (name, priv, topic) => post('/rooms', { name, private: !!priv, topic }).then((d) => d.room),
  room: (name) => get(`/rooms/${enc(name)}`).then((d) => d.room),
  // → {room, level}: this person's notification level in the room.
  setNotify: (name, level) => put(`/rooms/${enc(name)}/notifications`, { level }),
  setTopic: (name, topic) => patch(`/rooms/${enc(name)}`, { topic }).then((d) => d.room),
  members: (room) => get(`/rooms/${enc(room)}/members`).then((d) => d.members || []),
  join: (room) => post(`/rooms/${enc(room)}/members`, {}),
  addMember: (room, user) => post(`/rooms/${enc(room)}/members`, { user }),
  removeMember: (room, user) => del(`/rooms/${enc(room)}/members/${enc(user)}`),
  openDM: (withName) => post('/dms', { with: withName }).then((d) => d.room),

  // Messages
  // The channel (thread replies are in their threads), or with thread: a
  // thread's root and replies. around: a page with that message in its middle.
  messages: (room, { before, after, around, thread, limit = 50 } = {}) => {
    const q = new URLSearchParams({ limit: String(limit) });
    if (before) q.set('before', String(before));
    if (after !== undefined && after !== null) q.set('after', String(after));
    if (around) q.set('around', String(around));
    if (thread) q.set('thread', String(thread));
    return get(`/rooms/${enc(room)}/messages?${q}`);
  },
  // turns: {"owner/agent": turnId} the sender saw running (stale-turn guard);
  // thread: reply under that root; files: ids uploaded to this room;
  // signed: the owner's signed message statements (words.js).
  post: (room, text, turns, { thread, files, signed } = {}) => {
    const body = { text };
    if (turns && Object.keys(turns).length) body.turns = turns;
    if (thread) body.thread = thread;
    if (files && files.length) body.files = files;
    if (signed && signed.length) body.signed = signed;
    return postMessage(room, body);
  },
  editMessage: (room, id, text) => patch(`/rooms/${enc(room)}/messages/${id}`, { text }).then((d) => d.message),
  deleteMessage: (room, id) => del(`/rooms/${enc(room)}/messages/${id}`),
  react: (room, id, emoji, on) => request(on ? 'PUT' : 'DELETE', `/rooms/${enc(room)}/messages/${id}/reactions/${enc(emoji)}`),
  markRead: (room, id) => put(`/rooms/${enc(room)}/read`, { id }).then((d) => d.read),
  // → {results:[{message, snippet}], next?}
  search: (q, { room, from, before, limit } = {}) => {
    const p = new URLSearchParams({ q });
    if (room) p.set('room', room);
    if (from) p.set('from', from);
    if (before) p.set('before', String(before));
    if (limit) p.set('limit', String(limit));
    return get(`/search?${p}`);
  },
  // Raw bytes with ?name= → {file:{id,name,size,type,url}}
  upload: (room, file) => upload(`/rooms/${enc(room)}/files?name=${enc(file.name || 'pasted')}`, file).then((d) => d.file),
  settings: () => get('/settings'),

  // Agents, consent, steering
  agents: () => get('/agents').then((d) => d.agents || []),
  roomAgents: (room) => get(`/rooms/${enc(room)}/agents`).then((d) => d.agents || []),
  addAgent: (room, handle, signed) => post(`/rooms/${enc(room)}/agents`, { agent: handle.replace(/^@/, ''), signed }),
  removeAgent: (room, handle) => del(`/rooms/${enc(room)}${agentPath(handle)}`),
  invitations: () => get('/invitations').then((d) => d.invitations || []),
  decideInvitation: (id, decision, signed) => post(`/invitations/${enc(id)}`, { decision, signed }),
  setPolicy: (handle, policy, signed) => patch(agentPath(handle), { policy, signed }),
  // A room's ceiling for an agent: normal, ask or read-only.
  setCeiling: (room, handle, ceiling, signed) => patch(`/rooms/${enc(room)}${agentPath(handle)}`, { ceiling, signed }),
  interrupt: (handle) => post(`${agentPath(handle)}/interrupt`, {}),
  // → {entries, firstBad}: firstBad ≥ 0 is the first entry whose hash chain does not verify.
  timeline: (handle, turn) => get(`${agentPath(handle)}/timeline${turn ? `?turn=${enc(turn)}` : ''}`)
    .then((d) => ({ entries: d.entries || [], firstBad: typeof d.firstBad === 'number' ? d.firstBad : -1 })),

  // Approvals
  approvals: (state) => get(`/approvals${state ? `?state=${enc(state)}` : ''}`).then((d) => d.approvals || []),
  decideApproval: (id, decision, payloadHash, signed) => post(`/approvals/${enc(id)}`, { decision, payloadHash, signed }),

  // Owner devices (the bridge's trusted keys) and moderated messages
  devices: () => get('/devices').then((d) => d.devices || []),
  enrollDevice: (e) => post('/devices', e),
  revokeDevice: (id) => del(`/devices/${enc(id)}`),
  requests: () => get('/requests').then((d) => d.requests || []),
  answerRequest: (steerId, decision, signed) => post(`/requests/${enc(steerId)}`, { decision, signed }),

  // Bridges
  pairingToken: () => post('/bridges/pairing-tokens', {}),
  bridges: () => get('/bridges').then((d) => d.bridges || []),
  revokeBridge: (id) => del(`/bridges/${enc(id)}`),
};
