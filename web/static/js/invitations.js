// invitations.js — consent: someone asks for another person's agent in a
// room; the agent's owner accepts or declines, everyone else waits.

import { api, ApiError } from './api.js';
import { h, avatar, fmtFull, fmtTime, toast } from './dom.js';
import { state, emit, agentOwner } from './store.js';
import { signIfEnrolled } from './signing.js';
import { openDevices } from './devices.js';

const ownerOf = (inv) => inv.owner || agentOwner(inv.agent);

export async function loadInvitations() {
  try {
    const list = await api.invitations();
    state.features.invitations = true;
    for (const inv of list) state.invitations.set(inv.id, inv);
  } catch (ex) {
    if (ex instanceof ApiError && ex.missing) state.features.invitations = false;
  }
  emit('invitations');
}

export function upsertInvitation(inv) {
  if (!inv || !inv.id) return;
  state.features.invitations = true;
  state.invitations.set(inv.id, { ...(state.invitations.get(inv.id) || {}), ...inv });
  emit('invitations');
}

const roomName = (r) => (String(r).startsWith('dm:') ? 'a DM' : '#' + r);

export function awaitingMe() {
  return [...state.invitations.values()].filter((i) => i.status === 'pending' && ownerOf(i) === state.me?.name);
}

export function myRequests() {
  return [...state.invitations.values()].filter((i) => i.requestedBy === state.me?.name && ownerOf(i) !== state.me?.name);
}

function statusText(inv) {
  if (inv.status === 'accepted') return 'accepted';
  if (inv.status === 'declined') return 'declined';
  return ownerOf(inv) === state.me?.name ? 'awaiting you' : `awaiting owner @${ownerOf(inv)}`;
}

// A status line for the agent panel (no actions; those live in the Inbox).
export function invitationRow(inv) {
  return h('li', { class: 'invite-row', dataset: { id: inv.id, status: inv.status } },
    avatar(inv.agent, 'agent', 'avatar-xs'),
    h('span', { class: 'invite-text' }, h('strong', null, '@' + inv.agent), ` — invited by @${inv.requestedBy}`),
    h('span', { class: 'invite-status', dataset: { status: inv.status } }, statusText(inv)));
}

// The owner's card with Accept / Decline; requesters see the status.
export function invitationCard(inv) {
  const mine = ownerOf(inv) === state.me?.name;
  const actions = h('div', { class: 'card-actions' });
  if (mine && inv.status === 'pending') {
    const decide = (decision) => async () => {
      actions.querySelectorAll('button').forEach((b) => { b.disabled = true; });
      try {
        // Accepting is consent: signed by this browser's device, checked by
        // the agent's bridge.
        const signed = decision === 'accept' ? await signIfEnrolled(state.me.name, { kind: 'consent', agent: inv.agent, room: inv.room }) : undefined;
        const d = await api.decideInvitation(inv.id, decision, signed);
        upsertInvitation((d && d.invitation) || { ...inv, status: decision === 'accept' ? 'accepted' : 'declined' });
        if (decision === 'accept') toast(`@${inv.agent} joined ${roomName(inv.room)}`);
      } catch (ex) {
        if (ex.reason === 'signature-required') openDevices(`Accepting lets @${inv.agent} act in ${roomName(inv.room)}, so it needs this browser to be enrolled.`);
        else toast(ex.message, 'error');
        actions.querySelectorAll('button').forEach((b) => { b.disabled = false; });
      }
    };
    actions.append(
      h('button', { type: 'button', class: 'small-button primary accept', onclick: decide('accept') }, 'Accept'),
      h('button', { type: 'button', class: 'small-button decline', onclick: decide('decline') }, 'Decline'));
  } else {
    actions.append(h('span', { class: 'invite-status', dataset: { status: inv.status } }, statusText(inv)));
  }
  return h('article', { class: 'card invitation-card', dataset: { id: inv.id, status: inv.status }, 'aria-label': `Invitation for @${inv.agent}` },
    h('div', { class: 'card-head' }, avatar(inv.agent, 'agent', 'avatar-sm'),
      h('div', null,
        h('p', { class: 'card-title' }, mine ? `@${inv.requestedBy} wants @${inv.agent} in ${roomName(inv.room)}` : `You asked for @${inv.agent} in ${roomName(inv.room)}`),
        h('p', { class: 'card-sub', title: fmtFull(inv.at) }, fmtTime(inv.at)))),
    mine && inv.status === 'pending' ? h('p', { class: 'card-note' }, 'Accepting lets the room see this agent and lets members mention it as your policy allows.') : null,
    actions);
}
