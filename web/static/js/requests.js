// requests.js — moderated mentions: someone the owner's policy does not
// let address an agent directly asks through the owner, who forwards the
// message (signed with one of their devices, verified by the bridge) or
// declines it. The sender's receipt follows ("waiting for @owner", then
// the turn's outcome).

import { api, ApiError } from './api.js';
import { h, avatar, fmtFull, fmtTime, toast } from './dom.js';
import { fmtSize, isImage, url } from './render/files.js';
import { state, emit } from './store.js';
import { sign, NoDeviceError, SIGNATURE_REASONS, textHash, downloadFile } from './signing.js';
import { enrollPrompt } from './devices.js';

export async function loadRequests() {
  try {
    for (const q of await api.requests()) state.requests.set(q.steerId, q);
    state.features.requests = true;
  } catch (ex) {
    if (ex instanceof ApiError && ex.missing) state.features.requests = false;
  }
  keepFilesOf(waitingForMe());
  emit('requests');
}

// Each held request's files, downloaded once: the links the owner opens
// and the names and hashes a forward signs come from the same downloaded
// records. Keyed by the request and the very files it lists (an update
// naming other files is another download), a promise of
// [{name, sha256, url}] (url: a blob: URL of those bytes), or of an error
// (kept, so the Inbox does not download again on every redraw: Forward
// tries again).
const downloaded = new Map();

const filesKey = (q) => [q.steerId, ...(q.files || []).map((f) => `${f.id}\u0000${f.name}\u0000${f.url}`)].join('\u0001');

function filesOf(q, retry = false) {
  if (!(q.files || []).length) return Promise.resolve([]);
  const key = filesKey(q);
  const had = downloaded.get(key);
  if (had && !(retry && had.failed)) return had.p;
  const entry = { failed: false };
  entry.p = Promise.allSettled(q.files.map(async (f) => {
    const { sha256, bytes, type } = await downloadFile(url(f), f.name);
    // As the room's route serves files: an image a browser shows safely
    // as itself, anything else only as a download (never rendered in this
    // page's origin).
    const shown = isImage({ type }) ? type : 'application/octet-stream';
    return { name: f.name, sha256, url: URL.createObjectURL(new Blob([bytes], { type: shown })) };
  })).then((rs) => {
    const bad = rs.find((r) => r.status === 'rejected');
    if (!bad) return rs.map((r) => r.value);
    rs.forEach((r) => { if (r.status === 'fulfilled') URL.revokeObjectURL(r.value.url); });
    entry.failed = true;
    throw bad.reason;
  });
  entry.p.catch(() => {});
  downloaded.set(key, entry);
  return entry.p;
}

function forget(key) {
  const e = downloaded.get(key);
  if (!e) return;
  downloaded.delete(key);
  e.p.then((fs) => fs.forEach((f) => URL.revokeObjectURL(f.url)), () => {});
}

// keepFilesOf lets go of the downloads of every request but these.
function keepFilesOf(qs) {
  const keep = new Set(qs.map(filesKey));
  for (const key of [...downloaded.keys()]) if (!keep.has(key)) forget(key);
}

// forgetAllFiles lets go of every download (logging out).
export function forgetAllFiles() { keepFilesOf([]); }

export function upsertRequest(q) {
  if (!q || !q.steerId) return;
  const old = state.requests.get(q.steerId);
  state.requests.set(q.steerId, { ...(old || {}), ...q });
  keepFilesOf(waitingForMe());
  if (!old && q.status === 'held' && q.owner === state.me?.name) toast(`@${q.sender} asks @${q.agent}: forward it or decline it in your Inbox`);
  emit('requests');
}

// waitingForMe: held messages to my agents.
export function waitingForMe() {
  return [...state.requests.values()].filter((q) => q.status === 'held' && q.owner === state.me?.name)
    .sort((a, b) => new Date(a.at) - new Date(b.at));
}

const where = (room) => (String(room).startsWith('dm:') ? 'a DM' : '#' + room);

// fileList lists a held request's files; each link opens the bytes this
// browser downloaded once it has them (the ones a forward signs).
function fileList(q) {
  const fs = q.files || [];
  if (!fs.length) return null;
  const links = fs.map((f) => h('a', { download: f.name, 'aria-disabled': 'true' }, f.name));
  const notes = fs.map(() => h('span', { class: 'request-file-note' }, ' · reading…'));
  if (q.status === 'held' && q.owner === state.me?.name) {
    filesOf(q).then((got) => got.forEach((g, i) => {
      links[i].href = g.url;
      links[i].removeAttribute('aria-disabled');
      notes[i].textContent = '';
    }), (ex) => notes.forEach((n) => { n.textContent = ` · ${ex.message}`; }));
  } else {
    // Not yours to forward: a plain download.
    links.forEach((a, i) => { if (url(fs[i])) { a.href = url(fs[i]); a.removeAttribute('aria-disabled'); } });
    notes.forEach((n) => { n.textContent = ''; });
  }
  return h('ul', { class: 'request-files', 'aria-label': 'files posted with it' },
    fs.map((f, i) => h('li', null, links[i], ` · ${fmtSize(f.size)}`, notes[i])));
}

export function requestCard(q) {
  const actions = h('div', { class: 'card-actions' });
  const note = h('div', { class: 'request-prompt' });
  const decide = (decision) => async () => {
    actions.querySelectorAll('button').forEach((b) => { b.disabled = true; });
    note.replaceChildren();
    try {
      let signed;
      if (decision === 'forward') {
        // The signature covers exactly the words and files shown, from
        // this sender, hashed by this browser, never by the hub (a hub that
        // showed one text and named the hash of another would have the
        // owner sign what they never read): each file by its name and the
        // hash of the bytes downloaded, the ones behind its link.
        const st = { kind: 'forward', agent: q.agent, steer: q.steerId, room: q.room, sender: q.sender, textHash: await textHash(q.text) };
        const files = await filesOf(q, true);
        if (files.length) st.files = files.map((f) => ({ name: f.name, sha256: f.sha256 }));
        signed = await sign(state.me.name, st);
      }
      const d = await api.answerRequest(q.steerId, decision, signed);
      upsertRequest((d && d.request) || { ...q, status: decision === 'forward' ? 'pending' : 'rejected' });
    } catch (ex) {
      if (ex instanceof NoDeviceError) note.replaceChildren(enrollPrompt('Forwarding'));
      else toast(SIGNATURE_REASONS.has(ex.reason) ? `Your bridge could not verify the forward: ${ex.message}` : ex.message, 'error');
      actions.querySelectorAll('button').forEach((b) => { b.disabled = false; });
    }
  };
  if (q.status === 'held') {
    actions.append(
      h('button', { type: 'button', class: 'small-button primary forward', onclick: decide('forward') }, 'Forward'),
      h('button', { type: 'button', class: 'small-button decline', onclick: decide('decline') }, 'Decline'));
  } else {
    actions.append(h('span', { class: 'request-status', dataset: { status: q.status } },
      q.forwardedBy ? `forwarded by @${q.forwardedBy}` : q.status === 'rejected' ? 'declined' : q.status));
  }
  return h('article', { class: 'card request-card', dataset: { steer: q.steerId, status: q.status, agent: q.agent, sender: q.sender },
    'aria-label': `@${q.sender} asks @${q.agent}` },
  h('div', { class: 'card-head' }, avatar(q.sender, 'user', 'avatar-sm'),
    h('div', null,
      h('p', { class: 'card-title' }, `@${q.sender} asks @${q.agent}`),
      h('p', { class: 'card-sub', title: fmtFull(q.at) }, `in ${where(q.room)} · ${fmtTime(q.at)}`))),
  h('pre', { class: 'request-text', tabindex: '0' }, q.text),
  fileList(q),
  h('p', { class: 'card-note' }, `Forwarding hands @${q.sender}'s words${(q.files || []).length ? ' and files' : ''} to your agent as theirs (fenced, not yours), signed by this browser.`),
  actions, note);
}
