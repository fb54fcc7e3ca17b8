// dom.js — a tiny DOM builder and small UI utilities. Every piece of user
// data goes in as a text node or an attribute value, never as HTML.

/**
 * h('button', {class: 'x', onclick: fn, dataset: {id: 1}}, 'text', child)
 * Props: class, text, dataset, on<event>, boolean attrs (true/false), others as attributes.
 */
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  if (props) {
    for (const [k, v] of Object.entries(props)) {
      if (v == null || v === false) continue;
      if (k === 'class') el.className = v;
      else if (k === 'text') el.textContent = v;
      else if (k === 'dataset') for (const [dk, dv] of Object.entries(v)) { if (dv != null) el.dataset[dk] = String(dv); }
      else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
      else if (k === 'value') el.value = v;
      else if (k === 'checked') el.checked = !!v;
      else if (v === true) el.setAttribute(k, '');
      else el.setAttribute(k, String(v));
    }
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c == null || c === false || c === '') continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

export function clear(el) {
  while (el.firstChild) el.firstChild.remove();
  return el;
}

/**
 * Make el's children look like fresh's while keeping the nodes that stay:
 * a list redrawn on every change (the room list, on each unread count)
 * would otherwise replace the element under a click between its mousedown
 * and mouseup, and the click would be lost. Children are matched by key(node)
 * when it gives one, else by position and tag. Listeners stay those of the
 * kept nodes: fresh nodes must be built the same way.
 */
export function morphChildren(el, fresh, key = () => null) {
  const byKey = new Map();
  for (const c of el.children) {
    const k = key(c);
    if (k != null) byKey.set(k, c);
  }
  const want = [...fresh];
  want.forEach((n, i) => {
    const k = key(n);
    let old = k != null ? byKey.get(k) : el.childNodes[i];
    if (k != null) byKey.delete(k);
    if (old && old.nodeType === n.nodeType && old.nodeName === n.nodeName && (k != null || key(old) == null)) {
      morph(old, n);
    } else {
      old = n;
    }
    if (el.childNodes[i] !== old) el.insertBefore(old, el.childNodes[i] || null);
  });
  while (el.childNodes.length > want.length) el.lastChild.remove();
  return el;
}

function morph(old, n) {
  if (old.nodeType !== Node.ELEMENT_NODE) {
    if (old.nodeValue !== n.nodeValue) old.nodeValue = n.nodeValue;
    return;
  }
  for (const a of [...old.attributes]) if (!n.hasAttribute(a.name)) old.removeAttribute(a.name);
  for (const a of n.attributes) if (old.getAttribute(a.name) !== a.value) old.setAttribute(a.name, a.value);
  morphChildren(old, n.childNodes);
}

// Announce text to screen readers through the polite live region.
let announceTimer;
export function announce(text) {
  const el = document.getElementById('live-announcer');
  if (!el) return;
  clearTimeout(announceTimer);
  el.textContent = '';
  announceTimer = setTimeout(() => { el.textContent = text; }, 50);
}

// A short notice in the corner; kind is 'info' or 'error'.
export function toast(text, kind = 'info') {
  const box = document.getElementById('toasts');
  if (!box) return;
  const t = h('div', { class: `toast toast-${kind}`, role: kind === 'error' ? 'alert' : 'status' }, text);
  box.append(t);
  setTimeout(() => t.classList.add('toast-out'), 4500);
  setTimeout(() => t.remove(), 5000);
}

export async function copyText(text) {
  try {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(text);
      return true;
    }
  } catch { /* fall through to the selection fallback */ }
  const ta = h('textarea', { class: 'copy-buffer', readonly: true, 'aria-hidden': 'true' });
  ta.value = text;
  document.body.append(ta);
  ta.select();
  let ok = false;
  try { ok = document.execCommand('copy'); } catch { ok = false; }
  ta.remove();
  return ok;
}

// A button that copies text() and says so briefly.
export function copyButton(text, label = 'Copy', extraClass = '') {
  const b = h('button', { type: 'button', class: `small-button copy-button ${extraClass}`.trim() }, label);
  b.addEventListener('click', async () => {
    const ok = await copyText(typeof text === 'function' ? text() : text);
    b.textContent = ok ? 'Copied' : 'Copy failed';
    setTimeout(() => { b.textContent = label; }, 1500);
  });
  return b;
}

const timeFmt = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit' });
const dateFmt = new Intl.DateTimeFormat(undefined, { weekday: 'long', month: 'long', day: 'numeric' });
const fullFmt = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });

export function fmtTime(iso) {
  const d = new Date(iso);
  return isNaN(d) ? '' : timeFmt.format(d);
}

export function fmtFull(iso) {
  const d = new Date(iso);
  return isNaN(d) ? '' : fullFmt.format(d);
}

export function dayKey(iso) {
  const d = new Date(iso);
  return isNaN(d) ? '' : `${d.getFullYear()}-${d.getMonth()}-${d.getDate()}`;
}

export function fmtDay(iso) {
  const d = new Date(iso);
  if (isNaN(d)) return '';
  const today = new Date();
  const yesterday = new Date(Date.now() - 864e5);
  if (dayKey(d) === dayKey(today)) return 'Today';
  if (dayKey(d) === dayKey(yesterday)) return 'Yesterday';
  return dateFmt.format(d);
}

// "in 4:05" / "2 min ago" style for expiries.
export function fmtCountdown(iso) {
  const ms = new Date(iso) - Date.now();
  if (isNaN(ms)) return '';
  if (ms <= 0) return 'expired';
  const s = Math.ceil(ms / 1000);
  if (s >= 3600) return `in ${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  return `in ${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

export function initials(name) {
  const base = String(name || '?').split('/').pop();
  const parts = base.split(/[\s._-]+/).filter(Boolean);
  const s = parts.length > 1 ? parts[0][0] + parts[1][0] : base.slice(0, 2);
  return s.toUpperCase();
}

// A stable hue for a name, used through classes (hue-0 … hue-7).
export function hueClass(name) {
  let x = 0;
  for (const ch of String(name)) x = (x * 31 + ch.codePointAt(0)) >>> 0;
  return `hue-${x % 8}`;
}

export function avatar(name, kind = 'user', size = '') {
  return h('span', { class: `avatar ${size} ${hueClass(name)} ${kind === 'agent' ? 'avatar-agent' : ''}`, 'aria-hidden': 'true' },
    kind === 'agent' ? icon('bot') : initials(name));
}

export function icon(name) {
  return h('span', { class: `icon icon-${name}`, 'aria-hidden': 'true' });
}

// A turn id for display: without a "turn-" prefix; long ids keep their
// head and tail (ids often share a prefix per bridge).
export function shortTurn(id) {
  const s = String(id || '').replace(/^turn[-_]?/i, '');
  return s.length <= 16 ? s : `${s.slice(0, 8)}…${s.slice(-4)}`;
}

// replaceToken puts insert in the text box ta in place of the typed token
// {start, end} (one space after it is absorbed), moves the caret after it
// (the caller tells the box's listeners).
export function replaceToken(ta, token, insert) {
  const v = ta.value;
  ta.value = v.slice(0, token.start) + insert + v.slice(token.end).replace(/^ /, '');
  const caret = token.start + insert.length;
  ta.setSelectionRange(caret, caret);
}

export function debounce(fn, ms) {
  let t;
  return (...args) => { clearTimeout(t); t = setTimeout(() => fn(...args), ms); };
}
