// devices.js — the Devices dialog: enroll this browser (a key, or a
// passkey) with the code the bridge shows, see the devices each of your
// bridges trusts, and revoke one. Also the "enroll first" prompts the
// approval card and the inbox show.

import { api } from './api.js';
import { h, clear, fmtFull, toast } from './dom.js';
import { openDialog, field, errorLine, setError, busy, confirmDialog } from './dialog.js';
import { state, emit, on } from './store.js';
import { enroll, loadDevice, forgetDevice, signingAvailable, passkeysAvailable, whyNotSigning } from './signing.js';

// This browser's device (null: not enrolled), kept current for renders.
export const thisDevice = { rec: null, loaded: false };

export async function loadThisDevice() {
  thisDevice.rec = state.me ? await loadDevice(state.me.name) : null;
  thisDevice.loaded = true;
  emit('device');
}

export function initDevices() {
  on('devices-changed', () => { if (document.getElementById('devices-dialog')) renderList(); });
  document.getElementById('open-devices').addEventListener('click', () => {
    document.getElementById('user-menu').hidden = true;
    document.getElementById('user-menu-button').setAttribute('aria-expanded', 'false');
    openDevices();
  });
}

function defaultName() {
  const ua = navigator.userAgent || '';
  if (/iPhone|Android.*Mobile|Mobile/.test(ua) || window.matchMedia('(max-width: 600px)').matches) return 'phone';
  if (/iPad|Tablet/.test(ua)) return 'tablet';
  return 'laptop';
}

let listEl;
let noteEl;
let statusEl;

// openDevices(why) opens the dialog; why explains what needs a device.
export function openDevices(why) {
  const status = h('div', { id: 'device-status', class: 'device-status' });
  statusEl = status;
  listEl = h('ul', { id: 'device-list', class: 'device-list', 'aria-label': 'Devices your bridges trust' });
  noteEl = h('p', { class: 'form-status', id: 'devices-note', role: 'status' });
  const body = h('div', { class: 'stack devices' },
    why ? h('p', { class: 'panel-note device-why', role: 'note' }, why) : null,
    h('p', { class: 'muted' }, 'Your bridge acts on approvals, new rooms and wider policies only when one of your devices signed them — the hub only passes them on. Enroll each browser or phone you decide from with a code your bridge shows on its own terminal.'),
    status,
    signingAvailable() ? enrollForm(status) : h('p', { class: 'form-error', id: 'device-unavailable' }, whyNotSigning()),
    h('h3', { class: 'subhead' }, 'Devices your bridges trust'),
    listEl, noteEl);
  openDialog({ id: 'devices-dialog', title: 'Devices', body, wide: true });
  renderStatus(status).then(renderList);
}

async function renderStatus(el) {
  await loadThisDevice();
  const rec = thisDevice.rec;
  clear(el).append(rec && rec.id
    ? h('p', { class: 'this-device-status', dataset: { device: rec.id, kind: rec.kind } },
      h('strong', null, 'This browser is enrolled'), ` as “${rec.name}” (${rec.kind === 'webauthn' ? 'a passkey' : 'a browser key'}, ${rec.id}).`)
    : h('p', { class: 'this-device-status', dataset: { device: '' } }, h('strong', null, 'This browser is not enrolled yet.'), ' Enroll it below to approve from here.'));
}

function enrollForm(status) {
  const name = h('input', { id: 'enroll-name', value: defaultName(), maxlength: 64, autocomplete: 'off', required: true });
  const code = h('input', { id: 'enroll-code', placeholder: 'ABCDE-FGHIJ', autocomplete: 'one-time-code', autocapitalize: 'characters', spellcheck: 'false', required: true });
  const bridge = h('select', { id: 'enroll-bridge' });
  const bridgeRow = field('Bridge', bridge, 'The machine whose code you type.');
  bridgeRow.hidden = true;
  const passkey = h('input', { type: 'checkbox', id: 'enroll-passkey' });
  const err = errorLine('enroll-error');
  const submit = h('button', { type: 'submit', id: 'enroll-submit', class: 'primary-button' }, 'Enroll this device');
  const form = h('form', { id: 'enroll-form', class: 'stack' },
    h('h3', { class: 'subhead' }, 'Enroll this device'),
    h('p', { class: 'field-hint' }, 'On the bridge machine run ', h('code', null, 'wheelhouse bridge devices add'),
      ' (with ', h('code', null, 'wheelhouse up'), ' the code is already in its terminal), then type the code here.'),
    field('Name', name, 'How the bridge and your approvals name this device: laptop, phone…'),
    bridgeRow,
    field('Code from the bridge', code),
    passkeysAvailable() ? h('label', { class: 'check' }, passkey,
      h('span', null, 'Use a passkey', h('small', { class: 'muted block' }, 'Touch ID, Windows Hello, your phone or a security key confirms each decision.'))) : null,
    err,
    h('div', { class: 'form-row' }, submit));
  api.bridges().then((bs) => {
    const active = bs.filter((b) => !b.revoked);
    for (const b of active) bridge.append(h('option', { value: b.id }, `${b.name || b.id} (${b.id})`));
    bridgeRow.hidden = active.length < 2;
    if (!active.length) setError(err, 'You have no bridge yet: pair one first (your name → Pair a bridge…).');
  }).catch(() => {});
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    setError(err, '');
    await busy(form, async () => {
      try {
        const rec = await enroll({ user: state.me.name, name: name.value.trim(), code: code.value, bridge: bridge.value, passkey: passkey.checked });
        code.value = '';
        toast(`This browser is enrolled as “${rec.name}”`);
        await renderStatus(status);
        await renderList();
        emit('device');
      } catch (ex) {
        setError(err, ex.message || String(ex));
      }
    });
  });
  return form;
}

async function renderList() {
  if (!listEl) return;
  let devs;
  try {
    devs = await api.devices();
  } catch (ex) {
    noteEl.textContent = `Could not load your devices: ${ex.message}`;
    return;
  }
  const mine = thisDevice.rec && thisDevice.rec.id;
  clear(listEl);
  noteEl.textContent = devs.length ? '' : 'None yet.';
  const sorted = [...devs].sort((a, b) => (a.revoked - b.revoked) || String(a.addedAt).localeCompare(String(b.addedAt)));
  for (const d of sorted) {
    const row = h('li', { class: 'device-row', dataset: { id: d.id, revoked: String(!!d.revoked), bridge: d.bridge } },
      h('div', { class: 'pick-main' },
        h('span', { class: 'device-name pick-title' }, d.name, d.id === mine ? h('span', { class: 'this-device' }, ' · this browser') : null),
        h('span', { class: 'pick-sub' }, `${d.kind === 'webauthn' ? 'passkey' : 'browser key'} · trusted by ${d.bridgeName || d.bridge} · `,
          h('code', { title: d.id }, d.id), d.addedAt ? ` · since ${fmtFull(d.addedAt)}` : '')),
      h('span', { class: 'device-state', dataset: { revoked: String(!!d.revoked) } }, d.revoked ? 'revoked' : 'trusted'));
    if (!d.revoked) {
      const revoke = h('button', { type: 'button', class: 'small-button danger revoke-device' }, 'Revoke');
      revoke.addEventListener('click', async () => {
        if (!(await confirmDialog(`Revoke “${d.name}”? Your bridges refuse its signatures from now on.`, 'Revoke'))) return;
        revoke.disabled = true;
        try {
          await api.revokeDevice(d.id);
          if (d.id === mine) { await forgetDevice(state.me.name); await renderStatus(statusEl); }
          toast(`Revoked “${d.name}”`);
        } catch (ex) {
          toast(ex.message, 'error');
        }
        renderList();
      });
      row.append(revoke);
    }
    listEl.append(row);
  }
}

// enrollPrompt(what) is a short note with a button that opens the dialog:
// shown where a decision needs this browser to be enrolled.
export function enrollPrompt(what) {
  return h('p', { class: 'enroll-prompt', role: 'note' },
    `${what} needs one of your enrolled devices, and this browser is not one yet. `,
    h('button', { type: 'button', class: 'link-button open-devices', onclick: () => openDevices(`${what} needs this browser to be enrolled.`) }, 'Enroll this browser…'));
}

// deviceNotice is the inbox's first-run note for an owner whose browser is
// not enrolled: approving needs it. null when there is nothing to say.
export function deviceNotice() {
  if (!thisDevice.loaded || (thisDevice.rec && thisDevice.rec.id)) return null;
  const mine = state.allAgents.some((a) => a.owner === state.me?.name);
  if (!mine) return null;
  return h('div', { class: 'device-notice', id: 'device-notice', role: 'note' },
    h('p', null, h('strong', null, 'Enroll this browser to decide for your agents. '),
      'Approvals, new rooms and wider policies are signed here and checked by your bridge, so the hub cannot make them for you.'),
    h('button', { type: 'button', class: 'small-button primary', id: 'device-notice-open', onclick: () => openDevices() }, 'Enroll this browser…'));
}
