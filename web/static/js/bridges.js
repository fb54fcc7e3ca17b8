// bridges.js — the caller's paired bridges (machines), with Revoke. Shown
// in the pairing dialog.

import { api } from './api.js';
import { h, clear, fmtFull, fmtTime, toast } from './dom.js';
import { confirmDialog } from './dialog.js';

// bridgesSection() → an element listing the caller's bridges, with a
// Refresh button (a machine paired meanwhile shows up).
export function bridgesSection() {
  const list = h('ul', { id: 'bridge-list', class: 'bridge-list', 'aria-label': 'Your bridges' });
  const note = h('p', { class: 'form-status', id: 'bridges-note', role: 'status' });
  const refresh = h('button', { id: 'bridges-refresh', type: 'button', class: 'small-button' }, 'Refresh');
  const box = h('section', { class: 'stack bridges', 'aria-labelledby': 'bridges-heading' },
    h('div', { class: 'toolbar' }, h('h3', { id: 'bridges-heading', class: 'subhead' }, 'Your bridges'), refresh),
    list, note);

  const load = async () => {
    refresh.disabled = true;
    try {
      render(list, note, await api.bridges(), load);
    } catch (ex) {
      clear(list);
      note.textContent = ex.missing ? 'Listing bridges is not available on this hub.' : `Could not load your bridges: ${ex.message}`;
    } finally {
      refresh.disabled = false;
    }
  };
  refresh.addEventListener('click', load);
  load();
  return box;
}

function render(list, note, bridges, reload) {
  clear(list);
  // Active ones first, each group oldest first.
  const sorted = [...bridges].sort((a, b) => (a.revoked - b.revoked) || String(a.createdAt).localeCompare(String(b.createdAt)));
  note.textContent = sorted.length ? '' : 'No bridges yet. Pair a machine above.';
  for (const b of sorted) list.append(row(b, reload));
}

function row(b, reload) {
  const when = b.createdAt ? h('span', { class: 'bridge-created', title: fmtFull(b.createdAt) }, `paired ${fmtFull(b.createdAt) || fmtTime(b.createdAt)}`) : null;
  const status = h('span', { class: 'bridge-status', dataset: { revoked: String(!!b.revoked) } }, b.revoked ? 'revoked' : 'active');
  const li = h('li', { class: 'bridge-row', dataset: { id: b.id, revoked: String(!!b.revoked) } },
    h('div', { class: 'pick-main' },
      h('span', { class: 'bridge-name pick-title' }, b.name || '(unnamed)'),
      h('span', { class: 'pick-sub' }, when, when ? ' · ' : null, h('code', { class: 'bridge-id', title: b.id }, shortId(b.id)))),
    status);
  if (!b.revoked) {
    const revoke = h('button', { type: 'button', class: 'small-button danger revoke-bridge' }, 'Revoke');
    revoke.addEventListener('click', async () => {
      const ok = await confirmDialog(`Revoke the bridge “${b.name || b.id}”? Its agents go offline and it cannot connect again until you pair it anew.`, 'Revoke');
      if (!ok) return;
      revoke.disabled = true;
      try {
        await api.revokeBridge(b.id);
        toast(`Revoked the bridge “${b.name || b.id}”`);
      } catch (ex) {
        toast(ex.message, 'error');
      }
      await reload();
    });
    li.append(revoke);
  }
  return li;
}

function shortId(id) {
  const s = String(id || '');
  return s.length <= 14 ? s : `${s.slice(0, 10)}…`;
}
