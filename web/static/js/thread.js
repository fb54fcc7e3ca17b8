// thread.js — the thread panel: a message and its replies. An agent's turn
// is a thread: the mention that started it is the root, and the agent's
// replies, its activity and its approval cards live here. A reply addressed
// to the agent (the "To @agent" switch, or an @mention) steers the turn
// running in this thread; after it ended, it starts a new one here.

import { api } from './api.js';
import { h, clear, icon, announce, dayKey } from './dom.js';
import { state, on, emit, threadLog, logFor, mergeReceipt, receiptsFor, roomLabel, agentByHandle } from './store.js';
import { messageEl, daySeparator } from './render/message.js';
import { isActivity, ActivityGroup } from './render/activity.js';
import { renderReceipts } from './receipts.js';
import { approvalCard } from './approvals.js';
import { agentMentions } from './render/mentions.js';
import { turnWords } from './render/threadline.js';
import { markRead, lastReadOf } from './unread.js';
import { storeMessage } from './chatevents.js';
import { initMentions } from './mentions.js';
import { attacher } from './uploads.js';
import { signWords, wordsHint } from './words.js';
import { carryEdit } from './edit.js';
import { addPage } from './messages.js';

let open = null; // {room, root}
let rootMsg = null;
let els = new Map();
let loading = false;
let errorText = '';
let panel, list, ta, form, err, toggle, toggleBox, sendBtn, mentions, files, wordsBox;

export function initThread() {
  ta = h('textarea', { id: 'thread-composer', rows: 1, placeholder: 'Reply in the thread', 'aria-label': 'Reply in the thread', autocomplete: 'off' });
  sendBtn = h('button', { id: 'thread-send', type: 'submit', class: 'primary-button send-button' }, 'Reply');
  toggle = h('input', { id: 'thread-address', type: 'checkbox' });
  toggleBox = h('label', { class: 'thread-address', hidden: true }, toggle, h('span', { id: 'thread-address-text' }));
  err = h('p', { id: 'thread-error', class: 'form-error', role: 'alert', hidden: true });
  wordsBox = h('div', { id: 'thread-words-hint', class: 'thread-words-hint', hidden: true });
  const mentionList = h('ul', { id: 'thread-mention-list', class: 'mention-list', role: 'listbox', 'aria-label': 'Mention suggestions', hidden: true });
  ta.setAttribute('role', 'combobox');
  ta.setAttribute('aria-autocomplete', 'list');
  ta.setAttribute('aria-expanded', 'false');
  ta.setAttribute('aria-controls', 'thread-mention-list');
  form = h('form', { id: 'thread-form', class: 'composer thread-composer' },
    toggleBox, wordsBox, h('div', { class: 'composer-box' }, ta, mentionList, sendBtn), err);
  list = h('div', { id: 'thread-messages', class: 'messages thread-messages', role: 'log', 'aria-label': 'Thread', tabindex: '0' });
  panel = h('aside', { id: 'thread-panel', class: 'thread-panel', 'aria-labelledby': 'thread-title', hidden: true },
    h('header', { class: 'thread-head' },
      h('div', { class: 'thread-title-wrap' }, h('h2', { id: 'thread-title' }, 'Thread'), h('p', { id: 'thread-room', class: 'room-topic' })),
      h('button', { id: 'thread-close', type: 'button', class: 'icon-button', 'aria-label': 'Close the thread', onclick: closeThread }, icon('close'))),
    list, form);
  document.getElementById('app-screen').append(panel);
  files = attacher({
    composerBox: form.querySelector('.composer-box'), textarea: ta, dropZone: panel,
    ids: { input: 'thread-file-input', button: 'thread-attach-button', list: 'thread-attachments' },
    key: () => (open ? `thread:${open.root}` : null),
    room: () => open && open.room,
    changed: () => { if (!err.hidden) err.hidden = true; },
  });

  mentions = initMentions(ta, mentionList);
  form.addEventListener('submit', (e) => { e.preventDefault(); send(); });
  ta.addEventListener('keydown', (e) => {
    if (e.isComposing || e.keyCode === 229) return;
    if (mentions.handleKey(e)) { e.preventDefault(); e.stopPropagation(); return; }
    if (e.key === 'Enter' && !e.shiftKey && !e.altKey && !e.ctrlKey && !e.metaKey) { e.preventDefault(); form.requestSubmit(); }
    if (e.key === 'Escape' && !ta.value) closeThread();
  });
  ta.addEventListener('input', () => {
    ta.style.height = 'auto';
    ta.style.height = Math.min(ta.scrollHeight, 200) + 'px';
    if (!err.hidden) { err.hidden = true; }
    renderWords();
  });
  toggle.addEventListener('change', () => { toggle.dataset.touched = '1'; renderToggle(); renderWords(); });
  on('device', () => renderWords());

  on('open-thread', ({ room, root }) => openThread(room, root));
  on('act', ({ action, message }) => { if (action === 'reply') openThread(message.room, message.id, { focus: true }); });
  on('reply', (m) => { if (open && m.thread === open.root) { threadLog(open.root).add(m); redraw(); } });
  // An edit, a streamed agent message or a reaction changes one message:
  // only it is drawn again, so a click elsewhere in the thread (an approval,
  // another message's reaction) is not lost to a redraw under it.
  on('updated', (m) => {
    if (!open) return;
    if (m.id === open.root) { rootMsg = { ...rootMsg, ...m }; redrawOne(m.id); } else if (m.thread === open.root) redrawOne(m.id);
  });
  on('thread', (d) => { if (open && d.root === open.root && rootMsg) { rootMsg.replies = d.replies; redraw(); } });
  on('reactions', (d) => {
    if (!open || (d.messageId !== open.root && d.thread !== open.root)) return;
    if (d.messageId === open.root && rootMsg) rootMsg.reactions = d.reactions;
    redrawOne(d.messageId);
  });
  on('receipt', (r) => { const node = els.get(r.messageId); const ul = node && node.querySelector('.receipts'); if (ul) renderReceipts(ul, r.messageId); });
  on('approvals', () => { if (open) redraw(); });
  on('agents', () => { if (open) { refreshReceipts(); renderToggle(); } });
  on('current', () => { if (open && open.room !== state.current) closeThread(); });
}

export async function openThread(room, root, { focus = false, highlight = 0 } = {}) {
  if (!open || open.root !== root) {
    open = { room, root };
    rootMsg = logFor(room).byId.get(root) || null;
    errorText = '';
    ta.value = '';
    renderWords();
    toggle.checked = false;
    toggle.dataset.touched = '';
  }
  panel.hidden = false;
  files.render();
  document.getElementById('app-screen').classList.add('thread-open');
  document.getElementById('thread-room').textContent = roomLabel(state.rooms.get(room)) || room;
  redraw();
  await load();
  const el = highlight && els.get(highlight);
  if (el) {
    el.classList.add('flash');
    el.scrollIntoView({ block: 'center' });
  } else if (focus || window.matchMedia('(pointer: fine)').matches) ta.focus();
}

export function closeThread() {
  open = null;
  rootMsg = null;
  els = new Map();
  if (!panel) return;
  panel.hidden = true;
  files.render();
  document.getElementById('app-screen').classList.remove('thread-open');
  clear(list);
}

async function load() {
  const want = open;
  if (!want || loading) return;
  loading = true;
  try {
    const d = await api.messages(want.room, { thread: want.root, limit: 200 });
    if (open !== want) return;
    if (d.root) {
      rootMsg = d.root;
      const ch = logFor(want.room);
      if (ch.byId.has(d.root.id)) ch.byId.set(d.root.id, d.root);
    }
    const log = threadLog(want.root);
    addPage(log, d);
    log.loaded = true;
    errorText = '';
  } catch (ex) {
    errorText = `Could not load the thread: ${ex.message}`;
  } finally {
    loading = false;
  }
  if (open === want) {
    redraw();
    list.scrollTop = list.scrollHeight;
    // The default for the To-agent switch: on for whoever started the turn.
    if (!toggle.dataset.touched) {
      toggle.checked = !!(rootMsg && rootMsg.author === state.me?.name && threadAgent());
      renderToggle();
    }
  }
}

// replyText is the text a reply sends: with the To-agent switch on, the
// thread's agent is mentioned first unless the text mentions it.
function replyText(text) {
  const t = threadAgent();
  if (t && toggle.checked && !agentMentions(text).includes(t.handle.toLowerCase())) return `@${t.handle} ${text}`;
  return text;
}

// renderWords shows, when this browser cannot sign your words to your own
// agent the reply addresses, that it goes as a teammate's (words.js).
function renderWords() {
  const w = open && ta.value.trim() ? wordsHint(open.room, replyText(ta.value)) : null;
  wordsBox.replaceChildren(...(w ? [w] : []));
  wordsBox.hidden = !w;
}

// threadAgent is the agent whose turn is the newest in the thread.
function threadAgent() {
  const turns = (rootMsg && rootMsg.replies && rootMsg.replies.turns) || [];
  const t = turns[turns.length - 1];
  return t ? { handle: t.agent, turnId: t.turnId, status: t.status } : null;
}

function renderToggle() {
  const t = threadAgent();
  toggleBox.hidden = !t;
  if (!t) return;
  const live = t.status === 'running' || t.status === 'needs-approval';
  const what = live ? `steers its turn (${turnWords({ agent: t.handle, status: t.status })})` : 'starts a new turn in this thread';
  document.getElementById('thread-address-text').textContent = `To @${t.handle} — your reply ${what}`;
  toggleBox.dataset.agent = t.handle;
  toggleBox.dataset.live = String(live);
}

// redrawOne draws one message of the open thread again in place; an
// activity step (drawn in a group) or one not drawn yet redraws it all.
function redrawOne(id) {
  const node = els.get(id);
  const m = id === open.root ? rootMsg : threadLog(open.root).byId.get(id);
  if (!node || !m || !node.matches('article.message[data-id]')) { redraw(); return; }
  const fresh = messageEl(m, { inThread: true });
  if (node.classList.contains('thread-root')) fresh.classList.add('thread-root');
  carryEdit(node, fresh);
  node.replaceWith(fresh);
  els.set(id, fresh);
}

function redraw() {
  if (!open) return;
  const atBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 80;
  const top = list.scrollTop;
  clear(list);
  els = new Map();
  if (rootMsg) {
    const node = messageEl(rootMsg, { inThread: true });
    node.classList.add('thread-root');
    list.append(node);
    els.set(rootMsg.id, node);
    const n = rootMsg.replies ? rootMsg.replies.count || 0 : 0;
    list.append(h('div', { class: 'thread-divider', role: 'separator' }, h('span', null, `${n} repl${n === 1 ? 'y' : 'ies'}`)));
  } else if (!errorText) {
    list.append(h('div', { class: 'history-note' }, h('span', { class: 'spinner', 'aria-hidden': 'true' }), ' Loading the thread…'));
  }
  if (errorText) {
    list.append(h('div', { class: 'history-note history-error', role: 'alert' }, errorText, ' ',
      h('button', { type: 'button', class: 'link-button', onclick: () => { errorText = ''; load(); } }, 'Retry')));
  }
  let group = null;
  let last = null;
  for (const m of threadLog(open.root).messages()) {
    if (last && dayKey(last.createdAt) !== dayKey(m.createdAt)) { list.append(daySeparator(m.createdAt)); group = null; }
    if (isActivity(m)) {
      if (!group || !group.accepts(m) || last !== group.lastMsg) {
        group = new ActivityGroup(m, {});
        list.append(group.el);
      }
      els.set(m.id, group.add(m));
      group.lastMsg = m;
    } else {
      group = null;
      const node = messageEl(m, { inThread: true });
      list.append(node);
      els.set(m.id, node);
    }
    last = m;
  }
  const approvals = [...state.approvals.values()].filter((a) => a.thread === open.root || (a.room === open.room && threadTurns().has(a.turnId)));
  if (approvals.length) {
    list.append(h('div', { class: 'thread-approvals', 'aria-label': 'Approvals in this thread' },
      approvals.map((a) => approvalCard(a, { compact: !(a.status === 'pending' && a.owner === state.me?.name) }))));
  }
  if (atBottom) list.scrollTop = list.scrollHeight; else list.scrollTop = top;
  renderToggle();
  readReplies();
}

// Replies seen in the open thread count as read once the channel is read
// too (the hub's marker is one message id per room).
function readReplies() {
  if (!open || document.hidden) return;
  const newest = threadLog(open.root).newest;
  const ch = logFor(open.room);
  if (newest && !ch.detached && ch.newest <= lastReadOf(open.room)) markRead(open.room, newest);
}

function threadTurns() {
  return new Set(((rootMsg && rootMsg.replies && rootMsg.replies.turns) || []).map((t) => t.turnId));
}

function refreshReceipts() {
  for (const [id, node] of els) {
    const ul = node.querySelector && node.querySelector('.receipts');
    if (ul && receiptsFor(id).length) renderReceipts(ul, id);
  }
}

async function send() {
  if (!open) return;
  const { room, root } = open;
  let text = ta.value;
  const ready = files.ready();
  if (!text.trim() && !(ready && ready.length)) return;
  if (ready === null) {
    err.textContent = 'Wait until your files are uploaded.';
    err.hidden = false;
    return;
  }
  const t = threadAgent();
  const turns = {};
  if (t && toggle.checked) {
    text = replyText(text);
    const a = agentByHandle(t.handle);
    // The turn this thread runs: the hub steers only into it.
    if (t.status === 'running' || t.status === 'needs-approval') turns[t.handle] = t.turnId;
    else if (a && a.turnId && (a.status === 'working' || a.status === 'needs-approval') && a.turnId === t.turnId) turns[t.handle] = a.turnId;
  }
  // Your words to your own agents, signed by this browser (words.js).
  let signed;
  try {
    signed = await signWords({ room, text, thread: root, files: files.refs(), turns });
  } catch (ex) {
    err.textContent = `Not sent: this browser could not sign your words to your agent (${ex.message}).`;
    err.hidden = false;
    return;
  }
  const keep = ta.value;
  ta.value = '';
  renderWords();
  sendBtn.disabled = true;
  try {
    const d = await api.post(room, text, turns, { thread: root, files: ready, signed });
    if (ready.length) files.clear(`thread:${root}`);
    if (d && d.message) {
      for (const r of d.receipts || []) if (mergeReceipt(r)) emit('receipt', r);
      storeMessage({ ...d.message, room: d.message.room || room });
      if (open && open.root === root) { redraw(); list.scrollTop = list.scrollHeight; }
      if (t && toggle.checked) announce(`Sent to @${t.handle}`);
    }
  } catch (ex) {
    if (!ta.value) ta.value = keep;
    err.textContent = ex.status === 429 ? `Slow down: ${ex.message}` : ex.message;
    err.hidden = false;
  } finally {
    sendBtn.disabled = false;
  }
}
