// uploads.js — files for a message: the paperclip button, pasting, and
// dropping files on the room or the thread. Each file uploads at once (POST
// /rooms/{room}/files, the bytes as they are) and waits as a chip above the
// message box until the message is sent; images show in the message, with
// a lightbox, anything else as a download link. The room's composer and the
// thread's each have their own files (the thread's are kept per thread).

import { api } from './api.js';
import { h, clear, icon } from './dom.js';
import { state, on } from './store.js';
import { fmtSize, isImage } from './render/files.js';
import { openDialog } from './dialog.js';

const MAX_FILES = 10;
let limit = 0; // bytes a file, from GET /settings (0: unknown)
let seq = 0;
const all = [];
let main = null;

// Attacher is one composer's files: a paperclip button and a hidden file
// input put into composerBox, the chips before it, pasting into textarea and
// dropping on dropZone. key() names the draft the files belong to (null:
// none open), room() the room they upload to; changed() runs when the files
// change (the Send button follows).
class Attacher {
  constructor({ composerBox, textarea, dropZone, ids, key, room, changed }) {
    this.pending = new Map(); // key → [{key, name, size, state: 'uploading'|'ready'|'error', file?, error?}]
    this.key = key;
    this.room = room;
    this.changed = changed;
    this.input = h('input', { id: ids.input, type: 'file', multiple: true, hidden: true, tabindex: '-1' });
    const btn = h('button', { id: ids.button, type: 'button', class: 'icon-button attach-button', title: 'Attach files', 'aria-label': 'Attach files', onclick: () => this.input.click() }, icon('paperclip'));
    composerBox.prepend(btn, this.input);
    this.box = h('ul', { id: ids.list, class: 'attachments', 'aria-label': 'Files to send', hidden: true });
    composerBox.before(this.box);
    this.input.addEventListener('change', () => { this.add([...this.input.files]); this.input.value = ''; });
    textarea.addEventListener('paste', (e) => {
      const files = [...(e.clipboardData?.files || [])];
      if (!files.length) return;
      if (!e.clipboardData.getData('text/plain')) e.preventDefault();
      this.add(files);
    });
    dropZone.addEventListener('dragover', (e) => {
      if (!this.key() || ![...(e.dataTransfer?.types || [])].includes('Files')) return;
      e.preventDefault();
      e.stopPropagation();
      dropZone.classList.add('drop-target');
    });
    dropZone.addEventListener('dragleave', (e) => { if (!dropZone.contains(e.relatedTarget)) dropZone.classList.remove('drop-target'); });
    dropZone.addEventListener('drop', (e) => {
      dropZone.classList.remove('drop-target');
      const files = [...(e.dataTransfer?.files || [])];
      if (!files.length || !this.key()) return;
      e.preventDefault();
      e.stopPropagation();
      this.add(files);
    });
    all.push(this);
  }

  // ready are the ids the next message carries, or null while one is still
  // uploading.
  ready(k = this.key()) {
    const list = this.pending.get(k) || [];
    if (list.some((p) => p.state === 'uploading')) return null;
    return list.filter((p) => p.state === 'ready').map((p) => p.file.id);
  }

  // refs are the files the next message carries as a signed statement
  // names them: the name the hub gave each and the bytes this browser
  // uploaded (blob), or null while one is still uploading.
  refs(k = this.key()) {
    const list = this.pending.get(k) || [];
    if (list.some((p) => p.state === 'uploading')) return null;
    return list.filter((p) => p.state === 'ready').map((p) => ({ id: p.file.id, name: p.file.name, blob: p.blob }));
  }

  has(k = this.key()) { return (this.pending.get(k) || []).some((p) => p.state !== 'error'); }

  clear(k = this.key()) { this.pending.delete(k); this.render(); }

  reset() { this.pending.clear(); this.render(); }

  add(files) {
    const k = this.key();
    const room = this.room();
    if (!k || !room) return;
    const list = this.pending.get(k) || [];
    this.pending.set(k, list);
    for (const f of files) {
      const p = { key: ++seq, name: f.name || 'pasted file', size: f.size, state: 'uploading' };
      if (list.filter((x) => x.state !== 'error').length >= MAX_FILES) { p.state = 'error'; p.error = `at most ${MAX_FILES} files a message`; }
      else if (limit && f.size > limit) { p.state = 'error'; p.error = `larger than this hub's limit of ${fmtSize(limit)} a file`; }
      list.push(p);
      if (p.state === 'uploading') this.upload(room, p, f);
    }
    this.render();
    this.changed();
  }

  async upload(room, p, f) {
    try {
      p.file = await api.upload(room, f);
      p.blob = f; // the bytes sent: a signed message names their SHA-256
      p.state = 'ready';
    } catch (ex) {
      p.state = 'error';
      p.error = ex.message;
    }
    this.render();
    this.changed();
  }

  render() {
    const k = this.key();
    const list = (k && this.pending.get(k)) || [];
    clear(this.box);
    this.box.hidden = !list.length;
    for (const p of list) {
      const remove = h('button', {
        type: 'button', class: 'icon-button attachment-remove', 'aria-label': `Remove ${p.name}`,
        onclick: () => { this.pending.set(k, (this.pending.get(k) || []).filter((x) => x !== p)); this.render(); this.changed(); },
      }, icon('close'));
      this.box.append(h('li', { class: 'attachment', dataset: { state: p.state, name: p.name } },
        p.state === 'ready' && isImage(p.file) && String(p.file.url).startsWith('/api/v1/') ? h('img', { class: 'attachment-thumb', src: p.file.url, alt: '' }) : h('span', { class: 'attachment-icon', 'aria-hidden': 'true' }, p.state === 'uploading' ? h('span', { class: 'spinner' }) : '📄'),
        h('span', { class: 'attachment-text' },
          h('span', { class: 'attachment-name' }, p.name),
          h('span', { class: 'attachment-sub' }, p.state === 'error' ? `not sent: ${p.error}` : p.state === 'uploading' ? `uploading… ${fmtSize(p.size)}` : fmtSize(p.file.size))),
        remove));
    }
  }
}

// attacher adds file attachments to a composer (the thread panel's).
export function attacher(opts) { return new Attacher(opts); }

export function initUploads() {
  const composer = document.getElementById('composer');
  main = new Attacher({
    composerBox: document.querySelector('#composer-form .composer-box'),
    textarea: composer,
    dropZone: document.getElementById('room-view'),
    ids: { input: 'file-input', button: 'attach-button', list: 'attachments' },
    key: () => state.current,
    room: () => state.current,
    changed: () => composer.dispatchEvent(new Event('input', { bubbles: true })),
  });
  on('current', () => main.render());
  on('lightbox', ({ file }) => lightbox(file));
}

export async function loadUploadLimits() {
  try { limit = (await api.settings())?.limits?.fileBytes || 0; } catch { limit = 0; }
}

// readyFiles are the ids the next message in room carries, or null while
// one is still uploading.
export function readyFiles(room) { return main.ready(room); }

// readyRefs are readyFiles with each file's name and bytes (Attacher.refs).
export function readyRefs(room) { return main.refs(room); }

export function hasFiles(room) { return main.has(room); }

export function clearFiles(room) { main.clear(room); }

export function resetUploads() { for (const a of all) a.reset(); }

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
