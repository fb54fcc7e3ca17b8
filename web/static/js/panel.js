// panel.js — the side panel: Agents and Inbox tabs, toggling it (a drawer
// on narrow screens), and the Inbox — approvals awaiting the caller's
// decision outside the open room, invitations for the caller's agents, and
// the caller's own requests.

import { h, clear } from './dom.js';
import { state, on } from './store.js';
import { approvalCard, awaitingMyDecision, isDismissed } from './approvals.js';
import { invitationCard, awaitingMe, myRequests } from './invitations.js';
import { requestCard, waitingForMe } from './requests.js';
import { deviceNotice } from './devices.js';
import { setPanelDrawer } from './sidebar.js';

const app = () => document.getElementById('app-screen');
const narrow = () => window.matchMedia('(max-width: 1100px)').matches;

export function initPanel() {
  const tabs = [document.getElementById('tab-agents'), document.getElementById('tab-inbox')];
  tabs.forEach((t) => t.addEventListener('click', () => selectTab(t.id)));
  document.querySelector('.panel-tabs').addEventListener('keydown', (e) => {
    if (e.key !== 'ArrowLeft' && e.key !== 'ArrowRight') return;
    const i = tabs.indexOf(document.activeElement);
    if (i < 0) return;
    const next = tabs[(i + (e.key === 'ArrowRight' ? 1 : tabs.length - 1)) % tabs.length];
    next.focus();
    selectTab(next.id);
  });
  const toggle = document.getElementById('panel-toggle');
  toggle.addEventListener('click', () => {
    if (narrow()) {
      setPanelDrawer(!app().classList.contains('panel-open'));
      toggle.setAttribute('aria-expanded', String(app().classList.contains('panel-open')));
    } else {
      const collapsed = app().classList.toggle('panel-collapsed');
      toggle.setAttribute('aria-expanded', String(!collapsed));
    }
  });
  document.getElementById('panel-close').addEventListener('click', () => { setPanelDrawer(false); toggle.focus(); });
  document.addEventListener('keydown', (e) => {
    if (e.key === 'Escape' && app().classList.contains('panel-open') && !document.querySelector('dialog[open]')) {
      setPanelDrawer(false);
      toggle.focus();
    }
  });
  on('approvals', renderInbox);
  on('invitations', renderInbox);
  on('requests', renderInbox);
  on('device', renderInbox);
  on('current', renderInbox);
}

export function selectTab(id) {
  for (const t of document.querySelectorAll('.panel-tabs [role=tab]')) {
    const on = t.id === id;
    t.setAttribute('aria-selected', String(on));
    t.tabIndex = on ? 0 : -1;
    document.getElementById(t.getAttribute('aria-controls')).hidden = !on;
  }
}

function renderInbox() {
  const box = clear(document.getElementById('inbox-panel'));
  const approvals = awaitingMyDecision().filter((a) => a.room !== state.current && !isDismissed(a.id));
  const inThisRoom = awaitingMyDecision().filter((a) => a.room === state.current).length;
  const invites = awaitingMe();
  const requests = myRequests();
  const held = waitingForMe();
  const count = awaitingMyDecision().length + invites.length + held.length;
  for (const id of ['inbox-badge', 'panel-badge']) {
    const b = document.getElementById(id);
    b.textContent = count ? String(count) : '';
    b.hidden = !count;
    b.setAttribute('aria-label', `${count} waiting for you`);
  }
  const section = (title, nodes, id) => h('section', { class: 'inbox-section', id },
    h('h3', { class: 'subhead' }, title), nodes);

  if (state.features.approvals === false && state.features.invitations === false) {
    box.append(h('p', { class: 'panel-note' }, 'Approvals and invitations are not available on this hub yet.'));
    return;
  }
  const notice = deviceNotice();
  if (notice) box.append(notice);
  if (inThisRoom) box.append(h('p', { class: 'panel-note' }, `${inThisRoom} approval${inThisRoom === 1 ? '' : 's'} for you in this room — shown above the message box.`));
  if (approvals.length) box.append(section('Approvals waiting for you', approvals.map(approvalCard), 'inbox-approvals'));
  if (held.length) box.append(section('Messages waiting for you', held.map(requestCard), 'inbox-requests-held'));
  if (invites.length) box.append(section('Invitations for your agents', invites.map(invitationCard), 'inbox-invitations'));
  if (requests.length) box.append(section('Your requests', requests.slice(-10).reverse().map(invitationCard), 'inbox-requests'));
  if (!approvals.length && !invites.length && !requests.length && !inThisRoom && !held.length) {
    box.append(h('div', { class: 'empty-inbox' }, h('p', { class: 'empty-title' }, 'Nothing needs you right now'),
      h('p', { class: 'muted' }, 'Approvals for your agents and requests to add them to rooms show up here.')));
  }
}
