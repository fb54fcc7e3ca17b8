// dialog.js — modal dialogs on the native <dialog> element (focus trap and
// Esc come with it) and small form helpers.

import { h, icon } from './dom.js';

let seq = 0;

/**
 * openDialog({id, title, body, wide}) → the <dialog>; it removes itself on close.
 */
export function openDialog({ id, title, body, wide = false, onClose }) {
  const did = id || `dialog-${++seq}`;
  const close = h('button', { type: 'button', class: 'icon-button dialog-close', 'aria-label': 'Close' }, icon('close'));
  const dlg = h('dialog', { class: `dialog${wide ? ' dialog-wide' : ''}`, id: did, 'aria-labelledby': `${did}-title` },
    h('div', { class: 'dialog-inner' },
      h('div', { class: 'dialog-head' }, h('h2', { id: `${did}-title` }, title), close),
      h('div', { class: 'dialog-body' }, body)));
  close.addEventListener('click', () => dlg.close());
  dlg.addEventListener('click', (e) => { if (e.target === dlg) dlg.close(); });
  dlg.addEventListener('close', () => { dlg.remove(); if (onClose) onClose(); });
  document.getElementById(did)?.remove();
  document.body.append(dlg);
  dlg.showModal();
  const first = dlg.querySelector('[autofocus], input, select, textarea, .dialog-body button');
  if (first) first.focus();
  return dlg;
}

// field('Name', input, 'hint') → a labelled row.
export function field(label, input, hint) {
  if (!input.id) input.id = `f-${++seq}`;
  return h('div', { class: 'field' },
    h('label', { for: input.id }, label),
    input,
    hint ? h('p', { class: 'field-hint' }, hint) : null);
}

export function errorLine(id) {
  return h('p', { class: 'form-error', role: 'alert', id, hidden: true });
}

export function setError(el, text) {
  el.textContent = text || '';
  el.hidden = !text;
}

// Disable a form's controls while fn runs.
export async function busy(form, fn) {
  const controls = [...form.querySelectorAll('button, input, select, textarea')];
  const was = controls.map((c) => c.disabled);
  controls.forEach((c) => { c.disabled = true; });
  form.setAttribute('aria-busy', 'true');
  try {
    return await fn();
  } finally {
    controls.forEach((c, i) => { c.disabled = was[i]; });
    form.removeAttribute('aria-busy');
  }
}

// confirmDialog(question, okLabel) → Promise<boolean>; #confirm-ok / #confirm-cancel.
export function confirmDialog(question, okLabel = 'OK', danger = true) {
  return new Promise((resolve) => {
    let answer = false;
    const ok = h('button', { id: 'confirm-ok', type: 'button', class: danger ? 'primary-button danger-fill' : 'primary-button' }, okLabel);
    const cancel = h('button', { id: 'confirm-cancel', type: 'button', class: 'ghost-button' }, 'Cancel');
    const dlg = openDialog({
      id: 'confirm-dialog', title: question,
      body: h('div', { class: 'dialog-actions' }, cancel, ok),
      onClose: () => resolve(answer),
    });
    ok.addEventListener('click', () => { answer = true; dlg.close(); });
    cancel.addEventListener('click', () => dlg.close());
    ok.focus();
  });
}
