// render/markdown.js — message text as the markdown people expect (GitHub
// flavoured: lists, headings, tables, task lists, fenced code with a
// language label, links, strikethrough), parsed by the vendored marked and
// sanitized by the vendored DOMPurify with the browser's own parser.
//
// Safety, in three layers: raw HTML in a message is never markup (marked's
// html tokens are rendered as escaped text); DOMPurify keeps only the
// elements and attributes listed here and returns DOM nodes (no HTML string
// is ever assigned by this module's callers); links keep only http(s) and
// mailto targets. The strict CSP (no inline script, images from the hub
// only) stands behind all three.

import { Marked } from '../../vendor/marked/marked.esm.js';
import DOMPurify from '../../vendor/dompurify/purify.es.mjs';
import { h, copyButton } from '../dom.js';

export { agentMentions } from './mentions.js';

const escapeHTML = (s) => String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);

const md = new Marked({ gfm: true, breaks: true, async: false });
md.use({
  renderer: {
    // Typed HTML shows as the text that was typed.
    html({ text, block }) {
      const t = escapeHTML(block ? String(text).replace(/\n+$/, '') : text);
      return block ? `<p class="md-raw">${t}</p>\n` : t;
    },
    // An image is a link to it: nothing is fetched because a message said so.
    image({ href, text }) {
      return `<a href="${escapeHTML(href || '')}">${escapeHTML(text || href || 'image')}</a>`;
    },
  },
});

const TAGS = ['p', 'br', 'strong', 'em', 'del', 's', 'code', 'pre', 'blockquote', 'ul', 'ol', 'li',
  'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'table', 'thead', 'tbody', 'tr', 'th', 'td', 'a', 'hr', 'input', 'span'];
const ATTRS = ['href', 'title', 'class', 'align', 'type', 'checked', 'disabled', 'start'];

const purify = DOMPurify(window);
purify.addHook('uponSanitizeAttribute', (node, data) => {
  const tag = node.nodeName;
  if (data.attrName === 'class') {
    // marked's only class: the language of a fenced block.
    data.keepAttr = (tag === 'CODE' || tag === 'P') && /^(?:language-[\w+#.-]{1,40}|md-raw)$/.test(data.attrValue);
  } else if (data.attrName === 'type') {
    data.keepAttr = tag === 'INPUT' && data.attrValue === 'checkbox';
  } else if (data.attrName === 'align') {
    data.keepAttr = /^(?:left|center|right)$/.test(data.attrValue);
  }
});
purify.addHook('afterSanitizeAttributes', (node) => {
  if (node.nodeName === 'A') {
    const href = safeHref(node.getAttribute('href'));
    if (!href) node.removeAttribute('href');
    else {
      node.setAttribute('href', href);
      if (!href.startsWith(location.origin + '/')) {
        node.setAttribute('target', '_blank');
        node.setAttribute('rel', 'noopener noreferrer nofollow');
      }
    }
  } else if (node.nodeName === 'INPUT') {
    if (node.getAttribute('type') !== 'checkbox') node.remove();
    else node.setAttribute('disabled', '');
  }
});
// Set once: a config passed on every call is parsed again each time.
purify.setConfig({
  ALLOWED_TAGS: TAGS, ALLOWED_ATTR: ATTRS, ALLOW_DATA_ATTR: false, ALLOW_ARIA_ATTR: false,
  RETURN_DOM_FRAGMENT: true,
});

// safeHref keeps http(s) and mailto links (relative ones resolve against
// the hub); anything else (javascript:, data:, vbscript:, …) is dropped.
export function safeHref(raw) {
  if (raw == null || raw === '') return '';
  let u;
  try { u = new URL(raw, location.origin); } catch { return ''; }
  return ['http:', 'https:', 'mailto:'].includes(u.protocol) ? u.href : '';
}

// Rendered messages, by options and text: a room re-renders often (room
// switches, older pages), and the same text renders the same.
const CACHE_MAX = 400;
const cache = new Map();

/**
 * render(text, {me, inline}) → DocumentFragment
 * me: the viewer's user name, to highlight mentions of them and their agents.
 * inline: one line of inline markup (system notices), no blocks.
 */
export function render(text, opts = {}) {
  const src = String(text ?? '');
  const key = `${opts.inline ? 'i' : 'b'}:${opts.me || ''}:${src}`;
  let tpl = cache.get(key);
  if (tpl) {
    cache.delete(key);
  } else {
    tpl = build(src, opts);
    if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value);
  }
  cache.set(key, tpl);
  const frag = tpl.cloneNode(true);
  for (const b of frag.querySelectorAll('.code-copy')) {
    const pre = b.closest('.code-block')?.querySelector('pre');
    b.replaceWith(copyButton(() => (pre ? pre.textContent : ''), 'Copy', 'code-copy'));
  }
  return frag;
}

function build(src, opts) {
  const html = (opts.inline ? md.parseInline(src) : md.parse(src)).trim();
  const clean = purify.sanitize(html);
  const frag = document.createDocumentFragment();
  if (opts.inline) frag.append(clean);
  else frag.append(h('div', { class: 'md' }, clean));
  decorate(frag, opts);
  return frag;
}

// decorate adds what the parser does not: code blocks with a language label
// and a copy button, scrolling tables, and highlighted @mentions.
function decorate(root, opts) {
  for (const pre of root.querySelectorAll('pre')) {
    const code = pre.querySelector('code');
    const m = code && /(?:^|\s)language-([\w+#.-]+)/.exec(code.className);
    const lang = m ? m[1] : '';
    if (code) code.className = lang ? `lang-${lang.replace(/[^\w-]/g, '')}` : '';
    pre.setAttribute('tabindex', '0');
    const block = h('div', { class: 'code-block' },
      h('div', { class: 'code-block-head' },
        h('span', { class: 'code-lang' }, lang || 'code'),
        h('button', { type: 'button', class: 'small-button copy-button code-copy' }, 'Copy')));
    pre.replaceWith(block);
    block.append(pre);
  }
  for (const table of root.querySelectorAll('table')) {
    const wrap = h('div', { class: 'md-table-wrap', tabindex: '0' });
    table.replaceWith(wrap);
    wrap.append(table);
  }
  highlightMentions(root, opts);
}

const MENTION = /(^|[^\w@/`\\])@([a-z0-9][a-z0-9_.-]*(?:\/[a-z0-9][a-z0-9_.-]*)?)/gi;

// highlightMentions wraps @names in text outside code and links.
function highlightMentions(root, { me } = {}) {
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {
    acceptNode: (n) => (n.parentElement && n.parentElement.closest('code, pre, a') ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT),
  });
  const nodes = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) if (n.nodeValue.includes('@')) nodes.push(n);
  for (const n of nodes) {
    const text = n.nodeValue;
    const out = [];
    let last = 0;
    MENTION.lastIndex = 0;
    let m;
    while ((m = MENTION.exec(text))) {
      const start = m.index + m[1].length;
      let name = m[2];
      while (/[.-]$/.test(name)) name = name.slice(0, -1);
      out.push(text.slice(last, start), mentionEl(name, me));
      last = start + 1 + name.length;
      MENTION.lastIndex = last;
    }
    if (!out.length) continue;
    out.push(text.slice(last));
    n.replaceWith(...out.filter((x) => x !== ''));
  }
}

function mentionEl(name, me) {
  const lower = name.toLowerCase();
  const isAgent = lower.includes('/');
  const owner = lower.split('/')[0];
  let cls = isAgent ? 'mention mention-agent' : 'mention';
  if (me && (lower === me || (isAgent && owner === me))) cls += ' mention-me';
  return h('span', { class: cls, dataset: { mention: lower } }, '@' + name);
}

// plainText is the text a message reads as without markup (notification
// bodies, search snippets, thread previews).
export function plainText(text, max = 160) {
  const t = render(text).textContent.replace(/\s+/g, ' ').trim();
  return t.length > max ? t.slice(0, max - 1) + '…' : t;
}
