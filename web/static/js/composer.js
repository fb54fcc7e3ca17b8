// composer.js — writing and sending messages: Enter sends, Shift+Enter adds
// a line, drafts per room, and a hint of what each agent mention will do now.

import { api } from './api.js';
import { h, clear, shortTurn } from './dom.js';
import { state, on, logFor, mergeReceipt, emit, roomLabel } from './store.js';
import { agentMentions } from './render/markdown.js';
import { initMentions } from './mentions.js';
import { setError } from './dialog.js';
import { initSlash, run as runSlash, hint as slashHint, parse as parseSlash } from './slash.js';
import { readyFiles, readyRefs, hasFiles, clearFiles } from './uploads.js';
import { ceilingHint } from './ceilings.js';
import { signWords, wordsHint } from './words.js';

const MAX_BYTES = 16 * 1024;
const drafts = new Map();

const MODE_TEXT = {
  start: 'idle — will start a turn',
  steer: 'working — will steer the current turn',
  queue: 'busy — can only queue (runs when this turn ends)',
  'not-allowed': 'you may not address this agent',
  offline: 'offline — the mention will be rejected',
  moderated: 'goes to its owner first, who forwards it or not',
};

let ta, form, hint, err, sendBtn, mentions, slash;
let shownRoom = null;

export function initComposer() {
  ta = document.getElementById('composer');
  form = document.getElementById('composer-form');
  hint = document.getElementById('composer-hint');
  err = document.getElementById('composer-error');
  sendBtn = document.getElementById('send');
  slash = initSlash(ta, ta.parentElement);
  mentions = initMentions(ta, document.getElementById('mention-list'), { suppress: () => slash.ownsArgs() });

  ta.addEventListener('keydown', (e) => {
    if (e.isComposing || e.keyCode === 229) return;
    if (slash.handleKey(e) || mentions.handleKey(e)) { e.preventDefault(); e.stopPropagation(); return; }
    if (e.key === 'Enter' && !e.shiftKey && !e.altKey && !e.ctrlKey && !e.metaKey) {
      e.preventDefault();
      form.requestSubmit();
    }
  });
  ta.addEventListener('input', () => {
    grow();
    drafts.set(state.current, ta.value);
    renderHint();
    sendBtn.disabled = !ta.value.trim() && !hasFiles(state.current);
    if (!err.hidden) setError(err, '');
  });
  form.addEventListener('submit', (e) => { e.preventDefault(); send(); });
  on('agents', ({ room }) => { if (room === state.current) renderHint(); });
  on('device', () => renderHint());
}

function grow() {
  ta.style.height = 'auto';
  ta.style.height = Math.min(ta.scrollHeight, 240) + 'px';
}

export function showComposer(room) {
  if (shownRoom && shownRoom !== room) drafts.set(shownRoom, ta.value);
  shownRoom = room;
  mentions.close();
  slash.close();
  setError(err, '');
  form.hidden = !room;
  if (!room) return;
  const r = state.rooms.get(room);
  ta.value = drafts.get(room) || '';
  ta.placeholder = r ? `Message ${roomLabel(r)}` : 'Message';
  sendBtn.disabled = !ta.value.trim() && !hasFiles(state.current);
  grow();
  renderHint();
  if (window.matchMedia('(pointer: fine)').matches) ta.focus();
}

export function resetComposer() {
  drafts.clear();
  shownRoom = null;
  ta.value = '';
}

async function send() {
  const room = state.current;
  let text = ta.value;
  const files = readyFiles(room);
  if (!room || (!text.trim() && !(files && files.length))) return;
  if (files === null) { setError(err, 'Wait until your files are uploaded.'); return; }
  if (parseSlash(text)) { await command(room, text); return; }
  if (text.startsWith('//')) text = text.slice(1);
  if (new TextEncoder().encode(text).length > MAX_BYTES) {
    setError(err, 'That message is longer than 16 KiB. Share long output as a file or trim it.');
    return;
  }
  const turns = seenTurns(room, text);
  // Your words to your own agents, signed by this browser (words.js): the
  // exact text sent, the files' bytes as uploaded.
  let signed;
  try {
    signed = await signWords({ room, text, files: readyRefs(room), turns });
  } catch (ex) {
    setError(err, `Not sent: this browser could not sign your words to your agent (${ex.message}).`);
    return;
  }
  ta.value = '';
  drafts.delete(room);
  grow();
  renderHint();
  sendBtn.disabled = true;
  try {
    const d = await api.post(room, text, turns, { files, signed });
    if (files.length) clearFiles(room);
    if (d && d.message) {
      const fresh = logFor(room).add(d.message);
      for (const r of d.receipts || []) if (mergeReceipt(r)) emit('receipt', r);
      if (fresh) emit('message', d.message);
    }
  } catch (ex) {
    if (!ta.value) { ta.value = text; drafts.set(room, text); grow(); renderHint(); }
    sendBtn.disabled = !ta.value.trim() && !hasFiles(state.current);
    setError(err, ex.status === 429 ? `Slow down: ${ex.message}` : ex.message);
  }
}

// command runs a slash command; the text stays in the box if it fails.
async function command(room, text) {
  sendBtn.disabled = true;
  try {
    await runSlash(text);
    if (state.current === room && ta.value === text) { ta.value = ''; drafts.delete(room); grow(); renderHint(); }
  } catch (ex) {
    setError(err, ex.message);
  } finally {
    sendBtn.disabled = !ta.value.trim() && !hasFiles(state.current);
  }
}

// The turn the sender saw running for each mentioned agent: the hub steers
// only into that turn, never into one that started since.
function seenTurns(room, text) {
  const agents = state.roomAgents.get(room) || [];
  const turns = {};
  for (const handle of agentMentions(text)) {
    const a = agents.find((x) => x.handle.toLowerCase() === handle);
    if (a && a.turnId && (a.status === 'working' || a.status === 'needs-approval')) turns[a.handle] = a.turnId;
  }
  return turns;
}

function renderHint() {
  clear(hint);
  const room = state.current;
  const cmd = slashHint(ta.value);
  if (room && cmd) {
    hint.append(h('div', { class: 'mode-hint slash-hint' }, h('span', { class: 'mode-text' }, cmd)));
    hint.hidden = false;
    return;
  }
  if (!room || state.features.agents === false) { hint.hidden = true; return; }
  const handles = agentMentions(ta.value);
  const words = ta.value.trim() ? wordsHint(room, ta.value) : null;
  if (!handles.length && !words) { hint.hidden = true; return; }
  const agents = state.roomAgents.get(room) || [];
  for (const handle of handles) {
    const a = agents.find((x) => x.handle.toLowerCase() === handle);
    let mode = 'absent';
    let text = 'not in this room — add it from the Agents panel first';
    if (a) {
      mode = a.mode || (a.status === 'offline' ? 'offline' : '');
      text = a.modeText || MODE_TEXT[mode] || a.status || 'unknown';
      if (mode === 'steer' && a.turnId) text += ` (turn ${shortTurn(a.turnId)})`;
      const c = ceilingHint(a, room);
      if (c) text += ` · ${c}`;
    }
    hint.append(h('div', { class: 'mode-hint', dataset: { agent: handle, mode } },
      h('span', { class: 'mode-dot', 'aria-hidden': 'true' }),
      h('span', { class: 'mode-agent' }, '@' + handle),
      h('span', { class: 'mode-text' }, text)));
  }
  if (words) hint.append(words);
  hint.hidden = false;
}
