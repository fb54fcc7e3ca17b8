// live.js — the WebSocket feed (/api/v1/events?since=ID&n=N): resumes after
// any drop with the last position processed (an event id and, since one event
// may arrive as several items, the item's place n), never hands the same item
// on twice, backs off between attempts, and shows the #reconnecting banner
// while down.

import { api } from './api.js';

const MIN_DELAY = 500;
const MAX_DELAY = 15000;

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
    this.reconnectNow = () => { if (!this.ws && !this.stopped) { clearTimeout(this.timer); this.connect(); } };
    window.addEventListener('online', this.reconnectNow);
    document.addEventListener('visibilitychange', () => { if (!document.hidden) this.reconnectNow(); });
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
    ws.onmessage = (e) => this.handle(e.data);
    ws.onclose = (e) => {
      if (this.ws !== ws) return;
      this.ws = null;
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
    if (ev.type === 'ready') {
      if (typeof ev.id === 'number' && this.before(ev.id, ev.n ?? 0)) { this.lastId = ev.id; this.lastN = ev.n ?? 0; }
      this.attempt = 0;
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

  stop() {
    this.stopped = true;
    clearTimeout(this.timer);
    window.removeEventListener('online', this.reconnectNow);
    if (this.ws) { const ws = this.ws; this.ws = null; ws.close(1000, 'bye'); }
    banner(false);
  }
}

function banner(on) {
  const el = document.getElementById('reconnecting');
  if (el) el.hidden = !on;
}
