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

async function request(method, path, body, { quiet401 = false } = {}) {
  const opts = { method, headers: { Accept: 'application/json' }, credentials: 'same-origin' };
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
  if (!res.ok) {
    const e = (data && data.error) || {};
    const err = new ApiError(res.status, e.code || `http_${res.status}`, e.message || res.statusText || 'Request failed', e.reason);
    if (res.status === 401 && !quiet401) onUnauthenticated(err);
    throw err;
  }
  return data;
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
  members: (room) => get(`/rooms/${enc(room)}/members`).then((d) => d.members || []),
  join: (room) => post(`/rooms/${enc(room)}/members`, {}),
  addMember: (room, user) => post(`/rooms/${enc(room)}/members`, { user }),
  removeMember: (room, user) => del(`/rooms/${enc(room)}/members/${enc(user)}`),
  openDM: (withName) => post('/dms', { with: withName }).then((d) => d.room),

  // Messages
  messages: (room, { before, after, limit = 50 } = {}) => {
    // include=replies: thread replies inline, until the page shows threads.
    const q = new URLSearchParams({ limit: String(limit), include: 'replies' });
    if (before) q.set('before', String(before));
    if (after) q.set('after', String(after));
    return get(`/rooms/${enc(room)}/messages?${q}`);
  },
  // turns: {"owner/agent": turnId} the sender saw running (stale-turn guard).
  post: (room, text, turns) => post(`/rooms/${enc(room)}/messages`, turns && Object.keys(turns).length ? { text, turns } : { text }),

  // Agents, consent, steering
  agents: () => get('/agents').then((d) => d.agents || []),
  roomAgents: (room) => get(`/rooms/${enc(room)}/agents`).then((d) => d.agents || []),
  addAgent: (room, handle) => post(`/rooms/${enc(room)}/agents`, { agent: handle.replace(/^@/, '') }),
  removeAgent: (room, handle) => del(`/rooms/${enc(room)}${agentPath(handle)}`),
  invitations: () => get('/invitations').then((d) => d.invitations || []),
  decideInvitation: (id, decision) => post(`/invitations/${enc(id)}`, { decision }),
  setPolicy: (handle, policy) => patch(agentPath(handle), { policy }),
  interrupt: (handle) => post(`${agentPath(handle)}/interrupt`, {}),
  // → {entries, firstBad}: firstBad ≥ 0 is the first entry whose hash chain does not verify.
  timeline: (handle, turn) => get(`${agentPath(handle)}/timeline${turn ? `?turn=${enc(turn)}` : ''}`)
    .then((d) => ({ entries: d.entries || [], firstBad: typeof d.firstBad === 'number' ? d.firstBad : -1 })),

  // Approvals
  approvals: (state) => get(`/approvals${state ? `?state=${enc(state)}` : ''}`).then((d) => d.approvals || []),
  decideApproval: (id, decision, payloadHash) => post(`/approvals/${enc(id)}`, { decision, payloadHash }),

  // Bridges
  pairingToken: () => post('/bridges/pairing-tokens', {}),
  bridges: () => get('/bridges').then((d) => d.bridges || []),
  revokeBridge: (id) => del(`/bridges/${enc(id)}`),
};
