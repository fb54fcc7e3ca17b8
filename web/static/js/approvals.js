// approvals.js — approval cards: the command or diff, the payload hash the
// decision is bound to, where the call runs (sandbox), the tainted flag,
// whether pasted text reached the turn, and who steered it. Only the
// agent's owner sees Approve / Deny; everyone else sees who it waits for.

import { api, ApiError } from './api.js';
import { h, append, clear, avatar, copyButton, fmtCountdown, fmtFull, shortTurn, announce } from './dom.js';
import { state, on, emit } from './store.js';
import { setError } from './dialog.js';
import { sign, NoDeviceError, SIGNATURE_REASONS } from './signing.js';
import { enrollPrompt } from './devices.js';

const dismissed = new Set();
// cards holds each approval's card in the tray, with the approval it shows.
const cards = new Map(); // id → {a, compact, el}

export function initApprovals() {
  on('approvals', renderTray);
  on('current', renderTray);
  setInterval(tick, 1000);
}

export async function loadApprovals() {
  try {
    const list = await api.approvals('pending');
    state.features.approvals = true;
    for (const a of list) state.approvals.set(a.id, a);
  } catch (ex) {
    if (ex instanceof ApiError && ex.missing) state.features.approvals = false;
  }
  emit('approvals');
}

export function upsertApproval(a) {
  if (!a || !a.id) return;
  state.features.approvals = true;
  const old = state.approvals.get(a.id);
  state.approvals.set(a.id, { ...(old || {}), ...a });
  if (!old && a.status === 'pending') {
    announce(a.owner === state.me?.name
      ? `@${a.agent} asks for your approval to run ${a.tool}`
      : `@${a.agent} is waiting for @${a.owner} to approve ${a.tool}`);
  }
  emit('approvals');
}

export function awaitingMyDecision() {
  return [...state.approvals.values()].filter((a) => a.status === 'pending' && a.owner === state.me?.name);
}

// decideApproval records the owner's decision on a, bound to the payload
// hash shown, and stores the answer (the cards and /approve, /deny).
// Approving is signed by this browser's device, and the agent's bridge
// checks the signature (the hub cannot approve); denying needs none. A
// browser that is not enrolled throws NoDeviceError.
export async function decideApproval(a, decision) {
  try {
    let signed;
    if (decision === 'approve') {
      signed = await sign(state.me.name, { kind: 'approval', agent: a.agent, approval: a.id, payloadHash: a.payloadHash });
    }
    const d = await api.decideApproval(a.id, decision, a.payloadHash, signed);
    upsertApproval((d && d.approval) || { id: a.id, status: decision === 'approve' ? 'approved' : 'denied', decidedBy: state.me.name });
  } catch (ex) {
    if (ex.reason === 'hash-mismatch') ex.message = `The request changed since it was shown (hash mismatch) — nothing was approved. ${ex.message}`;
    else if (SIGNATURE_REASONS.has(ex.reason)) ex.message = `Your decision could not be verified on @${a.owner}'s machine, so nothing was approved: ${ex.message}`;
    throw ex;
  }
}

function statusLabel(a) {
  switch (a.status) {
    case 'pending': return 'needs approval';
    case 'approved': return 'approved';
    case 'denied': return 'denied';
    case 'expired': return 'expired';
    case 'voided': return 'voided';
    default: return a.status || 'unknown';
  }
}

// Who decided, and with which device: "by @alice · laptop", or on the
// bridge machine itself.
function decidedBy(a) {
  if (!a.decidedBy) return '';
  if (a.decidedBy === 'wheelhouse') return '';
  if (a.deviceName || a.decidedDevice) return ` by @${a.decidedBy} · ${a.deviceName || a.decidedDevice}`;
  return a.status === 'approved' || a.status === 'denied' ? ` by @${a.decidedBy}${a.status === 'approved' ? ' on the bridge machine' : ''}` : ` by @${a.decidedBy}`;
}

function outcome(a) {
  const by = decidedBy(a);
  const why = a.reason ? ` — ${a.reason}` : '';
  switch (a.status) {
    case 'approved': return `Approved${by}${why}`;
    case 'denied': return `Denied${by}${why}`;
    case 'expired': return `Expired before a decision — the call was not run${why}`;
    case 'voided': return `Voided${why || ' — the request no longer applies'}`;
    default: return '';
  }
}

// What pasted, quoted or forwarded text (or another agent's output) reached
// the turn, in words (the same wording as the bridge's terminal).
const DATA_WORDS = { pasted: 'pasted text', code: 'pasted code', quote: 'a quote', forwarded: 'a forwarded message', 'peer-agent': "another agent's output" };
function dataPhrase(kinds) {
  const words = (kinds || []).map((k) => DATA_WORDS[k] || 'pasted text');
  if (words.length < 2) return words[0] || 'pasted text';
  return `${words.slice(0, -1).join(', ')} and ${words[words.length - 1]}`;
}

function diffView(diff) {
  const pre = h('pre', { class: 'approval-diff', tabindex: '0' });
  for (const line of String(diff).split('\n')) {
    let cls = 'diff-line';
    if (/^(\+\+\+|---)/.test(line)) cls += ' diff-file';
    else if (line.startsWith('+')) cls += ' diff-add';
    else if (line.startsWith('-')) cls += ' diff-del';
    else if (line.startsWith('@@')) cls += ' diff-hunk';
    pre.append(h('span', { class: cls }, line + '\n'));
  }
  return pre;
}

/**
 * approvalCard(a, {compact}) — compact cards (someone else's pending request,
 * or a decided one) fold their details behind the one-line header.
 */
export function approvalCard(a, { compact = false } = {}) {
  const mine = a.owner === state.me?.name;
  const pending = a.status === 'pending';
  const err = h('p', { class: 'form-error', role: 'alert', hidden: true });
  const prompt = h('div', { class: 'approval-prompt' });
  const steered = (a.steeredBy || []).filter(Boolean);
  const actions = h('div', { class: 'card-actions' });

  if (pending && mine) {
    const decide = (decision) => async () => {
      setError(err, '');
      prompt.replaceChildren();
      actions.querySelectorAll('button').forEach((b) => { b.disabled = true; });
      try {
        await decideApproval(a, decision);
      } catch (ex) {
        if (ex instanceof NoDeviceError) {
          prompt.replaceChildren(enrollPrompt('Approving'));
        } else {
          setError(err, ex.message || String(ex));
        }
        actions.querySelectorAll('button').forEach((b) => { b.disabled = false; });
      }
    };
    actions.append(
      h('button', { type: 'button', class: 'small-button primary approve', onclick: decide('approve'), 'aria-label': `Approve ${a.tool} for @${a.agent}` }, 'Approve'),
      h('button', { type: 'button', class: 'small-button danger deny', onclick: decide('deny'), 'aria-label': `Deny ${a.tool} for @${a.agent}` }, 'Deny'));
  }
  const waiting = pending && !mine ? h('span', { class: 'awaiting' }, `awaiting @${a.owner}`) : null;
  const done = !pending ? h('span', { class: 'approval-outcome' }, outcome(a)) : null;
  const dismiss = !pending ? h('button', {
    type: 'button', class: 'link-button dismiss',
    onclick: (e) => { e.preventDefault(); dismissed.add(a.id); emit('approvals'); },
  }, 'Dismiss') : null;

  const hash = String(a.payloadHash || '');
  const head = h(compact ? 'summary' : 'div', { class: 'card-head' },
    avatar(a.agent, 'agent', 'avatar-sm'),
    h('div', { class: 'card-head-text' },
      h('p', { class: 'card-title' }, h('strong', null, '@' + a.agent), ' wants to run ', h('code', null, a.tool || 'a tool')),
      h('p', { class: 'card-sub' },
        a.room ? (String(a.room).startsWith('dm:') ? 'in a DM' : `in #${a.room}`) : '',
        a.turnId ? h('span', { title: `turn ${a.turnId}` }, ` · turn ${shortTurn(a.turnId)}`) : null,
        compact && a.tainted ? h('span', { class: 'tainted-mini' }, ' · tainted') : null,
        compact && a.dataTainted ? h('span', { class: 'tainted-mini data-mini' }, ' · contains pasted text') : null)),
    compact && waiting ? waiting : h('span', { class: 'approval-status', dataset: { status: a.status } }, statusLabel(a)));

  const details = [
    a.unverified ? h('p', { class: 'unverified-flag', role: 'alert' },
      h('strong', null, 'A decision could not be verified. '),
      `@${a.owner}'s bridge refused a decision on this request that was not signed by one of @${a.owner}'s devices: ${a.unverified}`) : null,
    a.tainted ? h('p', { class: 'tainted-flag', role: 'note' },
      h('strong', null, 'Tainted turn. '),
      steered.length && steered.every((s) => s === a.owner)
        // Only the owner steered it, yet it is tainted: the bridge took
        // their words as a teammate's (not signed by an enrolled device).
        ? `@${a.owner}'s words in this turn were not signed by one of @${a.owner}'s enrolled devices, so the bridge counts them as a teammate's. `
        : steered.length ? `Steered by ${steered.map((s) => '@' + s).join(', ')} — not only the owner. ` : 'Not only the owner steered this turn. ',
      'Check the call carefully.') : null,
    a.dataTainted ? h('p', { class: 'tainted-flag data-flag', role: 'note' },
      h('strong', null, 'Contains pasted text. '),
      `This turn was given ${dataPhrase(a.data)} — words that are not ${a.owner ? '@' + a.owner + "'s" : "the owner's"} own. `,
      'Auto-approve is off for it; an instruction hidden in the text may have asked for this call.') : null,
    a.summary ? h('pre', { class: 'approval-command', tabindex: '0' }, a.summary) : null,
    a.diff ? h('details', { class: 'approval-diff-wrap', open: true }, h('summary', null, 'Diff'), diffView(a.diff)) : null,
    h('dl', { class: 'approval-meta' },
      a.sandbox ? h('dt', null, 'Sandbox') : null,
      a.sandbox ? h('dd', { class: 'approval-sandbox', dataset: { sandbox: String(a.sandbox).split(':')[0] } }, a.sandbox) : null,
      h('dt', null, 'Steered by'),
      h('dd', { class: 'approval-steered' }, steered.length ? steered.map((s) => '@' + s).join(', ') : `@${a.owner} only`),
      h('dt', null, 'Payload hash'),
      h('dd', { class: 'hash-row' },
        h('code', { class: 'payload-hash', title: hash, dataset: { hash } }, hash.slice(0, 12) + (hash.length > 12 ? '…' : '')),
        copyButton(hash, 'Copy', 'copy-hash')),
      pending && a.expires ? h('dt', null, 'Expires') : null,
      pending && a.expires ? h('dd', { class: 'approval-expires', dataset: { expires: a.expires }, title: fmtFull(a.expires) }, fmtCountdown(a.expires)) : null),
  ];
  const cls = `card approval-card status-${a.status}${a.tainted || a.dataTainted ? ' tainted' : ''}${compact ? ' compact' : ''}`;
  const attrs = {
    class: cls,
    dataset: { id: a.id, status: a.status, owner: a.owner, agent: a.agent, device: a.decidedDevice || null, unverified: a.unverified ? 'true' : null },
    'aria-label': `Approval request: @${a.agent} wants to run ${a.tool}`,
  };
  if (compact) {
    return h('article', attrs,
      h('details', { class: 'approval-fold' }, head, h('div', { class: 'approval-fold-body' }, details)),
      !pending ? h('div', { class: 'card-actions' }, done, dismiss) : null);
  }
  append(actions, [waiting, done, dismiss]);
  return h('article', attrs, head, details, actions, err, prompt);
}

function tick() {
  document.querySelectorAll('.approval-expires[data-expires]').forEach((el) => {
    el.textContent = fmtCountdown(el.dataset.expires);
  });
}

// The tray above the composer: this room's approvals, pending first.
function renderTray() {
  const tray = document.getElementById('approval-tray');
  const room = state.current;
  const list = [...state.approvals.values()]
    .filter((a) => a.room === room && !dismissed.has(a.id))
    .sort((x, y) => (y.status === 'pending') - (x.status === 'pending') || new Date(x.at) - new Date(y.at));
  tray.hidden = !list.length;
  const pending = list.filter((a) => a.status === 'pending').length;
  const head = h('p', { class: 'tray-head' }, pending ? `${pending} approval${pending === 1 ? '' : 's'} pending` : 'Recent approvals');
  // A card is built again only when its approval changed (upsertApproval
  // stores a new object): another approval arriving leaves an open fold,
  // a decision's error and the focus of the rest where they were.
  const fresh = list.map((a) => {
    const compact = !(a.status === 'pending' && a.owner === state.me?.name);
    const c = cards.get(a.id);
    if (c && c.a === a && c.compact === compact) return c.el;
    const el = approvalCard(a, { compact });
    cards.set(a.id, { a, compact, el });
    return el;
  });
  for (const id of cards.keys()) if (!state.approvals.has(id) || dismissed.has(id)) cards.delete(id);
  if (!list.length) { clear(tray); return; }
  const now = [...tray.children].slice(1);
  if (now.length === fresh.length && now.every((el, i) => el === fresh[i])) {
    tray.firstElementChild.replaceWith(head); // the same cards in the same order: moved, they would lose focus
  } else {
    tray.replaceChildren(head, ...fresh);
  }
}

export function isDismissed(id) { return dismissed.has(id); }
