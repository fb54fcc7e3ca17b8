// pairing.js — the owner gets a one-time bridge pairing token and the exact
// command to run on their machine; below it, the bridges already paired.

import { api } from './api.js';
import { h, append, clear, copyButton, fmtFull, fmtCountdown } from './dom.js';
import { openDialog } from './dialog.js';
import { bridgesSection } from './bridges.js';

export function openPairing() {
  const out = h('div', { class: 'stack', id: 'pairing-result' });
  const create = h('button', { id: 'pairing-create', type: 'button', class: 'primary-button' }, 'Create pairing token');
  const body = h('div', { class: 'stack' },
    h('p', null, 'A bridge runs your agents on your own machine and connects out to this hub. Pair a machine once with a one-time token:'),
    h('ol', { class: 'steps' },
      h('li', null, 'Create a token here (it works once and expires soon).'),
      h('li', null, 'Run the command on the machine where your agents live.'),
      h('li', null, 'Start it with ', h('code', null, 'wheelhouse bridge run'), '; your agents appear in the Agents panel.')),
    create, out, bridgesSection());
  create.addEventListener('click', async () => {
    create.disabled = true;
    clear(out);
    try {
      const d = await api.pairingToken();
      const cmd = d.command || `wheelhouse bridge pair --hub ${location.origin} --token ${d.token}`;
      append(out, [
        h('div', { class: 'command-box' },
          h('pre', { id: 'pairing-command', tabindex: '0' }, cmd),
          copyButton(cmd, 'Copy command', 'pairing-copy')),
        d.expiresAt ? h('p', { class: 'muted', title: fmtFull(d.expiresAt) }, `The token expires ${fmtCountdown(d.expiresAt)} and works once.`) : null]);
      out.querySelector('.pairing-copy').id = 'pairing-copy';
      create.textContent = 'Create another token';
    } catch (ex) {
      out.append(h('p', { class: 'form-error', role: 'alert' }, ex.missing ? 'Bridge pairing is not available on this hub yet.' : ex.message));
    } finally {
      create.disabled = false;
    }
  });
  openDialog({ id: 'pairing-dialog', title: 'Pair a bridge', body });
}
