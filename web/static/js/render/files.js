// render/files.js — a message's files: images inline (a click opens the
// lightbox), anything else a download link with its size. The hub serves
// each file to the room's members with nosniff and a Content-Disposition.

import { h } from '../dom.js';
import { emit } from '../store.js';

const INLINE = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);

export const isImage = (f) => INLINE.has(String(f.type || '').split(';')[0].trim());

export function fmtSize(n) {
  if (!(n >= 0)) return '';
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(n < 10 * 1024 ? 1 : 0)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

// A file's URL as the hub gave it, kept only if it is the hub's own.
export function url(f) {
  const u = String(f.url || '');
  return u.startsWith('/api/v1/') ? u : '';
}

export function filesEl(m) {
  const files = (m.files || []).filter((f) => url(f));
  if (!files.length) return null;
  return h('ul', { class: 'message-files', 'aria-label': 'Files' }, files.map((f) => {
    if (isImage(f)) {
      return h('li', { class: 'file file-image', dataset: { file: f.id, type: f.type } },
        h('button', {
          type: 'button', class: 'file-image-button', 'aria-label': `Open ${f.name}`,
          onclick: () => emit('lightbox', { file: f, message: m }),
        }, h('img', { src: url(f), alt: f.name, loading: 'lazy', decoding: 'async' })));
    }
    return h('li', { class: 'file file-other', dataset: { file: f.id, type: f.type } },
      h('a', { class: 'file-link', href: url(f), download: f.name, rel: 'noopener' },
        h('span', { class: 'file-icon', 'aria-hidden': 'true' }, '📄'),
        h('span', { class: 'file-name' }, f.name),
        h('span', { class: 'file-size' }, fmtSize(f.size))));
  }));
}
