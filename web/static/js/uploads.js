// uploads.js — files for a message: the paperclip button, pasting, and
// dropping files on the room. Each file uploads at once (POST
// /rooms/{room}/files, the bytes as they are) and waits as a chip above the
// message box until the message is sent; images show in the message, with
// a lightbox, anything else as a download link.

import { api } from './api.js';
import { h, clear, icon } from './dom.js';
import { state, on } from './store.js';
import { fmtSize, isImage } from './render/files.js';
import { openDialog } from './dialog.js';

const MAX_FILES = 10;
const pending = new Map(); // room → [{key, name, size, state: 'uploading'|'ready'|'error', file?, error?}]
let limit = 0; // bytes a file, from GET /settings (0: unknown)
let seq = 0;
let box, input;

export function initUploads() {
  const composerBox = document.querySelector('#composer-form .composer-box');
  input = h('input', { id: 'file-input', type: 'file', multiple: true, hidden: true, tabindex: '-1' });
  const btn = h('button', { id: 'attach-button', type: 'button', class: 'icon-button attach-button', title: 'Attach files', 'aria-label': 'Attach files', onclick: () => input.click() }, icon('paperclip'));
  composerBox.prepend(btn, input);
  box = h('ul', { id: 'attachments', class: 'attachments', 'aria-label': 'Files to send', hidden: true });
  composerBox.before(box);
  input.addEventListener('change', () => { add([...input.files]); input.value = ''; });
  document.getElementById('composer').addEventListener('paste', (e) => {
    const files = [...(e.clipboardData?.files || [])];
    if (!files.length) return;
    if (!e.clipboardData.getData('text/plain')) e.preventDefault();
    add(files);
  });
  const view = document.getElementById('room-view');
  view.addEventListener('dragover', (e) => {
    if (!state.current || ![...(e.dataTransfer?.types || [])].includes('Files')) return;
    e.preventDefault();
    view.classList.add('drop-target');
  });
  view.addEventListener('dragleave', (e) => { if (!view.contains(e.relatedTarget)) view.classList.remove('drop-target'); });
  view.addEventListener('drop', (e) => {
    view.classList.remove('drop-target');
    const files = [...(e.dataTransfer?.files || [])];
    if (!files.length || !state.current) return;
    e.preventDefault();
    add(files);
  });
  on('current', render);
  on('lightbox', ({ file }) => lightbox(file));
}

export async function loadUploadLimits() {
  try { limit = (await api.settings())?.limits?.fileBytes || 0; } catch { limit = 0; }
}

// readyFiles are the ids the next message in room carries, or null while
// one is still uploading.
export function readyFiles(room) {
  const list = pending.get(room) || [];
  if (list.some((p) => p.state === 'uploading')) return null;
  return list.filter((p) => p.state === 'ready').map((p) => p.file.id);
}

export function hasFiles(room) { return (pending.get(room) || []).some((p) => p.state !== 'error'); }

export function clearFiles(room) { pending.delete(room); render(); }

export function resetUploads() { pending.clear(); if (box) render(); }

function add(files) {
  const room = state.current;
  if (!room) return;
  const list = pending.get(room) || [];
  pending.set(room, list);
  for (const f of files) {
    const p = { key: ++seq, name: f.name || 'pasted file', size: f.size, state: 'uploading' };
    if (list.filter((x) => x.state !== 'error').length >= MAX_FILES) { p.state = 'error'; p.error = `at most ${MAX_FILES} files a message`; }
    else if (limit && f.size > limit) { p.state = 'error'; p.error = `larger than this hub's limit of ${fmtSize(limit)} a file`; }
    list.push(p);
    if (p.state === 'uploading') upload(room, p, f);
  }
  render();
  document.getElementById('composer').dispatchEvent(new Event('input', { bubbles: true }));
}

async function upload(room, p, f) {
  try {
    p.file = await api.upload(room, f);
    p.state = 'ready';
  } catch (ex) {
    p.state = 'error';
    p.error = ex.message;
  }
  render();
  document.getElementById('composer').dispatchEvent(new Event('input', { bubbles: true }));
}

function render() {
  if (!box) return;
  const list = pending.get(state.current) || [];
  clear(box);
  box.hidden = !list.length;
  for (const p of list) {
    const remove = h('button', {
      type: 'button', class: 'icon-button attachment-remove', 'aria-label': `Remove ${p.name}`,
      onclick: () => { pending.set(state.current, (pending.get(state.current) || []).filter((x) => x !== p)); render(); document.getElementById('composer').dispatchEvent(new Event('input', { bubbles: true })); },
    }, icon('close'));
    box.append(h('li', { class: 'attachment', dataset: { state: p.state, name: p.name } },
      p.state === 'ready' && isImage(p.file) && String(p.file.url).startsWith('/api/v1/') ? h('img', { class: 'attachment-thumb', src: p.file.url, alt: '' }) : h('span', { class: 'attachment-icon', 'aria-hidden': 'true' }, p.state === 'uploading' ? h('span', { class: 'spinner' }) : '📄'),
      h('span', { class: 'attachment-text' },
        h('span', { class: 'attachment-name' }, p.name),
        h('span', { class: 'attachment-sub' }, p.state === 'error' ? `not sent: ${p.error}` : p.state === 'uploading' ? `uploading… ${fmtSize(p.size)}` : fmtSize(p.file.size))),
      remove));
  }
}

function lightbox(f) {
  const img = h('img', { src: f.url, alt: f.name, class: 'lightbox-image' });
  const dlg = openDialog({
    id: 'lightbox', title: f.name, wide: true,
    body: h('div', { class: 'lightbox' }, img,
      h('p', { class: 'lightbox-meta' }, h('span', { class: 'muted' }, fmtSize(f.size)), ' ',
        h('a', { href: f.url, download: f.name, class: 'small-button' }, 'Download'))),
  });
  img.addEventListener('click', () => dlg.close());
}
