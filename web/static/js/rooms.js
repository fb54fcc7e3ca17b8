// rooms.js — the room header and the room dialogs: create, browse and join,
// members (add, remove, leave), and starting a DM with a person or agent.

import { api } from './api.js';
import { h, clear, avatar, toast } from './dom.js';
import { openDialog, field, errorLine, setError, busy, confirmDialog } from './dialog.js';
import { state, isDM, roomLabel } from './store.js';
import { actions } from './actions.js';

export function renderHeader() {
  const r = state.current && state.rooms.get(state.current);
  document.getElementById('room-title').textContent = r ? roomLabel(r) : 'Wheelhouse';
  const topic = document.getElementById('room-topic');
  topic.textContent = r ? (r.topic || (isDM(r) ? 'Direct message' : r.private ? 'Private room' : 'Public room')) : '';
  document.getElementById('room-actions').hidden = !r;
  document.getElementById('member-count').textContent = r ? String(r.memberCount || 0) : '0';
  document.getElementById('members-button').setAttribute('aria-label', r ? `${r.memberCount || 0} members — manage` : 'Members');
}

export function openCreateRoom() {
  const name = h('input', { id: 'new-room-name', required: true, maxlength: 64, autocapitalize: 'none', spellcheck: 'false', placeholder: 'e.g. parser-refactor' });
  const topic = h('input', { id: 'new-room-topic', maxlength: 200, placeholder: 'What is this room about?' });
  const priv = h('input', { id: 'new-room-private', type: 'checkbox' });
  const err = errorLine('new-room-error');
  const form = h('form', { class: 'stack' },
    field('Name', name, 'Lower-case letters, digits, - and _.'),
    field('Topic (optional)', topic),
    h('label', { class: 'check' }, priv, h('span', null, 'Private — only people you add can see it')),
    err,
    h('div', { class: 'dialog-actions' },
      h('button', { type: 'button', class: 'ghost-button', onclick: () => dlg.close() }, 'Cancel'),
      h('button', { id: 'new-room-submit', type: 'submit', class: 'primary-button' }, 'Create room')));
  name.addEventListener('input', () => {
    const v = name.value.toLowerCase().replace(/\s+/g, '-').replace(/[^a-z0-9_-]/g, '');
    if (v !== name.value) name.value = v;
  });
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    setError(err, '');
    await busy(form, async () => {
      try {
        const room = await api.createRoom(name.value.trim(), priv.checked, topic.value.trim());
        await actions.refreshRooms();
        dlg.close();
        actions.go(room.name);
      } catch (ex) { setError(err, ex.message); }
    });
  });
  const dlg = openDialog({ id: 'create-room-dialog', title: 'Create a room', body: form });
}

export async function openBrowse() {
  const filter = h('input', { id: 'browse-filter', type: 'search', placeholder: 'Filter rooms', 'aria-label': 'Filter rooms' });
  const list = h('ul', { class: 'pick-list', id: 'browse-list' }, h('li', { class: 'muted' }, 'Loading…'));
  const dlg = openDialog({ id: 'browse-dialog', title: 'Public rooms', body: h('div', { class: 'stack' }, filter, list) });
  let rooms = [];
  try { rooms = await api.publicRooms(); } catch (ex) { clear(list).append(h('li', { class: 'form-error' }, ex.message)); return; }
  const draw = () => {
    const q = filter.value.trim().toLowerCase();
    const shown = rooms.filter((r) => !q || r.name.includes(q) || (r.topic || '').toLowerCase().includes(q));
    clear(list);
    if (!shown.length) list.append(h('li', { class: 'muted' }, rooms.length ? 'No rooms match.' : 'No public rooms yet — create one.'));
    for (const r of shown) {
      const member = !!r.role;
      const btn = h('button', { type: 'button', class: member ? 'small-button' : 'small-button primary join' }, member ? 'Open' : 'Join');
      btn.addEventListener('click', async () => {
        try {
          if (!member) await api.join(r.name);
          await actions.refreshRooms();
          dlg.close();
          actions.go(r.name);
        } catch (ex) { toast(ex.message, 'error'); }
      });
      list.append(h('li', { class: 'pick-row public-room', dataset: { room: r.name } },
        h('div', { class: 'pick-main' },
          h('span', { class: 'pick-title' }, '#' + r.name),
          h('span', { class: 'pick-sub' }, `${r.memberCount} member${r.memberCount === 1 ? '' : 's'}${r.topic ? ' · ' + r.topic : ''}`)),
        btn));
    }
  };
  filter.addEventListener('input', draw);
  draw();
}

export async function openMembers() {
  const roomName = state.current;
  const r = state.rooms.get(roomName);
  if (!r) return;
  const list = h('ul', { class: 'pick-list', id: 'member-list' }, h('li', { class: 'muted' }, 'Loading…'));
  const err = errorLine('members-error');
  const body = h('div', { class: 'stack' }, list, err);
  const iAmAdmin = r.role === 'admin';
  const dm = isDM(r);
  let members = [];

  const draw = () => {
    clear(list);
    for (const m of members) {
      const me = m.user === state.me.name;
      const row = h('li', { class: 'pick-row member-row', dataset: { user: m.user } },
        avatar(m.user, 'user', 'avatar-sm'),
        h('div', { class: 'pick-main' },
          h('span', { class: 'pick-title' }, '@' + m.user, me ? ' (you)' : ''),
          h('span', { class: 'pick-sub' }, m.role === 'admin' ? 'room admin' : 'member', m.deactivated ? ' · deactivated' : '')));
      if (m.deactivated) row.dataset.deactivated = 'true';
      if (!dm && iAmAdmin && !me) {
        row.append(h('button', {
          type: 'button', class: 'small-button danger remove-member', 'aria-label': `Remove @${m.user}`,
          onclick: async () => {
            try { await api.removeMember(roomName, m.user); members = members.filter((x) => x.user !== m.user); draw(); actions.refreshRooms(); }
            catch (ex) { setError(err, ex.message); }
          },
        }, 'Remove'));
      }
      list.append(row);
    }
  };

  if (!dm && (!r.private || iAmAdmin)) {
    const input = h('input', { id: 'add-member-input', list: 'add-member-options', placeholder: 'name', autocapitalize: 'none', spellcheck: 'false', 'aria-label': 'Person to add' });
    const options = h('datalist', { id: 'add-member-options' });
    const form = h('form', { class: 'inline-form' }, input, options,
      h('button', { id: 'add-member-submit', type: 'submit', class: 'primary-button' }, 'Add'));
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      const who = input.value.trim().replace(/^@/, '');
      if (!who) return;
      setError(err, '');
      await busy(form, async () => {
        try {
          const d = await api.addMember(roomName, who);
          members = d && d.members ? d.members : await api.members(roomName);
          input.value = '';
          draw();
          actions.refreshRooms();
        } catch (ex) { setError(err, ex.message); }
      });
    });
    body.append(h('h3', { class: 'subhead' }, 'Add someone'), form);
    const fillOptions = () => {
      clear(options);
      const inRoom = new Set(members.map((m) => m.user));
      for (const u of state.users) if (!inRoom.has(u.name) && !u.deactivated) options.append(h('option', { value: u.name }, u.display || u.name));
    };
    body.addEventListener('focusin', fillOptions);
  }
  if (!dm) {
    body.append(h('div', { class: 'dialog-actions split' },
      h('span', { class: 'muted' }, r.private ? 'Private room' : 'Public room — anyone can join'),
      h('button', {
        id: 'leave-room', type: 'button', class: 'ghost-button danger',
        onclick: async () => {
          if (!(await confirmDialog(`Leave #${roomName}?`, 'Leave room'))) return;
          try { await api.removeMember(roomName, state.me.name); dlg.close(); await actions.refreshRooms(); actions.go(null); }
          catch (ex) { setError(err, ex.message); }
        },
      }, 'Leave room')));
  }
  const dlg = openDialog({ id: 'members-dialog', title: `Members of ${roomLabel(r)}`, body });
  try {
    members = await api.members(roomName);
    state.members.set(roomName, members);
    draw();
  } catch (ex) { clear(list); setError(err, ex.message); }
}

export async function openStartDM() {
  const filter = h('input', { id: 'dm-filter', type: 'search', placeholder: 'Find a person or agent', 'aria-label': 'Find a person or agent' });
  const list = h('ul', { class: 'pick-list', id: 'dm-targets' });
  const err = errorLine('dm-error');
  const dlg = openDialog({ id: 'dm-dialog', title: 'Start a direct message', body: h('div', { class: 'stack' }, filter, list, err) });
  const people = state.users.filter((u) => u.name !== state.me.name && !u.deactivated).map((u) => ({ with: u.name, label: '@' + u.name, sub: u.display || 'person', kind: 'user' }));
  const agents = state.allAgents.map((a) => ({ with: a.handle, label: '@' + a.handle, sub: `agent · ${a.harness || 'agent'} · ${a.status || 'offline'}`, kind: 'agent' }));
  const draw = () => {
    const q = filter.value.trim().toLowerCase().replace(/^@/, '');
    clear(list);
    const shown = [...people, ...agents].filter((t) => !q || t.with.toLowerCase().includes(q) || t.sub.toLowerCase().includes(q));
    if (!shown.length) list.append(h('li', { class: 'muted' }, people.length + agents.length ? 'Nobody matches.' : 'Nobody else here yet — an admin can add people.'));
    for (const t of shown) {
      const b = h('button', { type: 'button', class: 'pick-row pick-button dm-target', dataset: { with: t.with } },
        avatar(t.with, t.kind, 'avatar-sm'),
        h('span', { class: 'pick-main' }, h('span', { class: 'pick-title' }, t.label), h('span', { class: 'pick-sub' }, t.sub)));
      b.addEventListener('click', async () => {
        setError(err, '');
        try {
          const room = await api.openDM(t.with);
          await actions.refreshRooms();
          dlg.close();
          actions.go(room.name);
        } catch (ex) { setError(err, ex.message); }
      });
      list.append(h('li', null, b));
    }
  };
  filter.addEventListener('input', draw);
  draw();
}
