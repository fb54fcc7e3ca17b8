// live.js — the WebSocket feed (/api/v1/events?since=ID&n=N): resumes after
// any drop with the last position processed (an event id and, since one event
// may arrive as several items, the item's place n), never hands the same item
// on twice, backs off between attempts, and shows the #reconnecting banner
// while down. Once ready it also carries requests (request): a post goes as
// one frame and is answered by one "reply" frame on the same socket.

import { api } from './api.js';

const MIN_DELAY = 500;
const MAX_DELAY = 15000;
// The hub runs at most 8 requests per socket at once, and closes a socket
// whose frame is over 65 KiB: beyond either, the caller uses HTTP.
const MAX_PENDING = 8;
const MAX_FRAME = 60 << 10;
// A reply normally comes within a second or two. One later than this is
// taken as lost and the post goes again over HTTP with its key (safe: it
// is stored once); a socket that said nothing at all meanwhile is taken
// as dead without a close, and opened again.
const REPLY_WAIT = 10000;

export class Live {
  constructor({ since = 0, onEvent, onReady, onUnauthenticated }) {
    this.lastId = since;
    this.lastN = null; // null: all of lastId
    this.onEvent = onEvent;
    this.onReady = onReady || (() => {});
    this.onUnauthenticated = onUnauthenticated || (() => {});
    this.ws = null;
    this.stopped = false;
    this.attempt = 0;
    this.timer = null;
    this.everReady = false;
    this.ready = false; // this.ws has sent its ready frame
    this.pending = new Map(); // req → {ws, done, timer}
    this.reqN = 0;
    this.reconnectNow = () => { if (!this.ws && !this.stopped) { clearTimeout(this.timer); this.connect(); } };
    window.addEventListener('online', this.reconnectNow);
    this.onVisible = () => { if (!document.hidden) this.reconnectNow(); };
    document.addEventListener('visibilitychange', this.onVisible);
  }

  url() {
    const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
    const n = this.lastN === null ? '' : `&n=${this.lastN}`;
    return `${proto}//${location.host}/api/v1/events?since=${this.lastId}${n}`;
  }

  start() { this.connect(); }

  connect() {
    if (this.stopped) return;
    let ws;
    try { ws = new WebSocket(this.url()); } catch { this.scheduleRetry(); return; }
    this.ws = ws;
    ws.onmessage = (e) => { this.heard = Date.now(); this.handle(e.data); };
    ws.onclose = (e) => {
      this.unanswered(ws);
      if (this.ws !== ws) return;
      this.ws = null;
      this.ready = false;
      if (this.stopped) return;
      banner(true);
      // 4001: the session or token ended (logged out, revoked, password
      // changed, account deactivated): log in again, do not reconnect.
      if (e.code === 4001) { this.stop(); this.onUnauthenticated(e.reason); return; }
      // 1008 "too slow": we were behind; come straight back with since.
      if (e.code === 1008) { this.attempt = 0; this.timer = setTimeout(() => this.connect(), 100); return; }
      this.scheduleRetry();
    };
    ws.onerror = () => { /* onclose follows */ };
  }

  async scheduleRetry() {
    this.attempt++;
    // After repeated failures, check whether the session itself is gone.
    if (this.attempt >= 2) {
      try { await api.me(); } catch (err) {
        if (err.status === 401) { this.stop(); this.onUnauthenticated(); return; }
      }
    }
    if (this.stopped || this.ws) return;
    const base = Math.min(MAX_DELAY, MIN_DELAY * 2 ** Math.min(this.attempt - 1, 6));
    const delay = base / 2 + Math.random() * base / 2;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.connect(), delay);
  }

  handle(raw) {
    let ev;
    try { ev = JSON.parse(raw); } catch { return; }
    // A reply answers a request; it is no event of the feed (no id).
    // A reply answers a request (it carries its req, and no id of the log).
    if (ev.type === 'reply' && typeof ev.req === 'string' && ev.id === undefined) { this.answer(ev); return; }
    if (ev.type === 'ready') {
      if (typeof ev.id === 'number' && this.before(ev.id, ev.n ?? 0)) { this.lastId = ev.id; this.lastN = ev.n ?? 0; }
      this.attempt = 0;
      // Only a hub that says so takes requests on the socket (an older
      // node ignores them): everything goes over HTTP otherwise.
      this.ready = !!this.ws && ev.requests > 0;
      banner(false);
      const first = !this.everReady;
      this.everReady = true;
      this.onReady({ first });
      return;
    }
    if (typeof ev.id === 'number') {
      const n = ev.n ?? 0;
      if (!this.before(ev.id, n)) return; // already processed
      this.lastId = ev.id;
      this.lastN = n;
    }
    try { this.onEvent(ev); } catch (err) { console.error('event handler failed', ev.type, err); }
  }

  // before reports whether the position (id, n) is after the last one processed.
  before(id, n) {
    if (id !== this.lastId) return id > this.lastId;
    return this.lastN !== null && n > this.lastN;
  }

  // request sends body (an object with its type, "post") as one frame and
  // resolves with the hub's reply {status, data?, error?}, or with null
  // when the socket did not answer: not ready, MAX_PENDING under way, the
  // frame too large, or closed (or silent for REPLY_WAIT) before the
  // reply. A request that got null may have been carried out: send it
  // again only with the same idempotency key.
  request(body) {
    const ws = this.ws;
    if (!ws || !this.ready || ws.readyState !== WebSocket.OPEN || this.pending.size >= MAX_PENDING) return Promise.resolve(null);
    const req = `r${++this.reqN}`;
    const frame = JSON.stringify({ ...body, req });
    if (frame.length * 3 > MAX_FRAME && new TextEncoder().encode(frame).length > MAX_FRAME) return Promise.resolve(null);
    return new Promise((resolve) => {
      const sent = Date.now();
      const p = { ws, done: resolve, timer: setTimeout(() => {
        this.settle(req, null);
        if (this.ws === ws && !(this.heard > sent)) ws.close(4000, 'no reply'); // reconnects
      }, REPLY_WAIT) };
      this.pending.set(req, p);
      try { ws.send(frame); } catch { this.settle(req, null); }
    });
  }

  answer(ev) {
    if (typeof ev.req === 'string') this.settle(ev.req, { status: ev.status, data: ev.data, error: ev.error });
  }

  settle(req, reply) {
    const p = this.pending.get(req);
    if (!p) return;
    this.pending.delete(req);
    clearTimeout(p.timer);
    p.done(reply);
  }

  // unanswered settles, with null, every request still waiting on ws.
  unanswered(ws) {
    for (const [req, p] of this.pending) if (p.ws === ws) this.settle(req, null);
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.timer);
    window.removeEventListener('online', this.reconnectNow);
    document.removeEventListener('visibilitychange', this.onVisible);
    this.ready = false;
    if (this.ws) { const ws = this.ws; this.ws = null; ws.close(1000, 'bye'); this.unanswered(ws); }
    banner(false);
  }
}

function banner(on) {
  const el = document.getElementById('reconnecting');
  if (el) el.hidden = !on;
}
