// combobox.js — the option list of a WAI-ARIA combobox on the message box
// (the @mention and /command popups): arrow keys move, Enter or Tab picks,
// Esc closes, a click picks. Its owner finds the token being typed and the
// options; this draws them and puts the one picked in place of the token.

import { h, clear, replaceToken } from './dom.js';

/**
 * combobox(ta, listEl, {
 *   idPrefix,        // option ids: `${idPrefix}-${i}`
 *   className,       // each option's classes
 *   option(c),       // → { dataset, children } of an option
 *   insert(c),       // the text that replaces the token
 *   passKey(e, c, typed), // true: the key is not the popup's (typed: the token's text)
 *   controls,        // the list's id, set on the box while it is open ("" to leave it)
 *   onClose,         // after it closed
 * }) → { show(items, token), close, handleKey, isOpen }
 */
export function combobox(ta, listEl, { idPrefix, className, option, insert, passKey = () => false, controls = '', onClose = () => {} }) {
  let items = [];
  let active = 0;
  let token = null; // {start, end, query}

  function show(list, tok) {
    token = tok;
    items = list;
    if (!items.length) { close(); return; }
    active = Math.min(active, items.length - 1);
    draw();
  }

  function draw() {
    clear(listEl);
    items.forEach((c, i) => {
      const o = option(c);
      const li = h('li', {
        id: `${idPrefix}-${i}`, role: 'option', class: `${className}${i === active ? ' active' : ''}`,
        'aria-selected': String(i === active), dataset: o.dataset,
      }, o.children);
      li.addEventListener('mousedown', (e) => { e.preventDefault(); pick(i); });
      listEl.append(li);
    });
    listEl.hidden = false;
    if (controls) ta.setAttribute('aria-controls', controls);
    ta.setAttribute('aria-expanded', 'true');
    ta.setAttribute('aria-activedescendant', `${idPrefix}-${active}`);
    listEl.children[active]?.scrollIntoView({ block: 'nearest' });
  }

  function close() {
    items = [];
    active = 0;
    listEl.hidden = true;
    clear(listEl);
    ta.setAttribute('aria-expanded', 'false');
    ta.removeAttribute('aria-activedescendant');
    onClose();
  }

  function pick(i) {
    const c = items[i];
    if (!c || !token) return;
    replaceToken(ta, token, insert(c));
    close();
    ta.dispatchEvent(new Event('input', { bubbles: true }));
    ta.focus();
  }

  // handleKey returns true when the key was for the popup.
  function handleKey(e) {
    if (listEl.hidden || !items.length) return false;
    switch (e.key) {
      case 'ArrowDown': active = (active + 1) % items.length; draw(); return true;
      case 'ArrowUp': active = (active - 1 + items.length) % items.length; draw(); return true;
      case 'Enter': case 'Tab':
        if (passKey(e, items[active], ta.value.slice(token.start, token.end).toLowerCase())) return false;
        pick(active);
        return true;
      case 'Escape': close(); return true;
      default: return false;
    }
  }

  return { show, close, handleKey, isOpen: () => !listEl.hidden };
}
