// render/markdown.js — safe, small formatting for message text: ``` fenced
// code blocks, `inline code`, **bold**, "> " quotes, http(s) links and
// @mentions. It builds DOM nodes only; no text is ever parsed as HTML.

import { h, copyButton } from '../dom.js';

/**
 * render(text, {me}) → DocumentFragment
 * me: the viewer's user name, to highlight mentions of them and their agents.
 */
export function render(text, opts = {}) {
  const frag = document.createDocumentFragment();
  for (const block of blocks(String(text ?? ''))) {
    if (block.kind === 'code') frag.append(codeBlock(block.text, block.lang));
    else if (block.kind === 'quote') frag.append(h('blockquote', null, inline(block.text, opts)));
    else frag.append(h('span', { class: 'md-text' }, inline(block.text, opts)));
  }
  return frag;
}

const FENCE = /^\s{0,3}```\s*([\w+#.-]*)\s*$/;
const FENCE_OPEN = /^\s{0,3}```(.*)$/;

// blocks splits text into code, quote and plain runs.
export function blocks(text) {
  const out = [];
  const lines = text.split('\n');
  let plain = [];
  let quote = [];
  const flushPlain = () => { if (plain.length) { out.push({ kind: 'text', text: plain.join('\n') }); plain = []; } };
  const flushQuote = () => { if (quote.length) { out.push({ kind: 'quote', text: quote.join('\n') }); quote = []; } };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const open = FENCE_OPEN.exec(line);
    if (open) {
      flushPlain(); flushQuote();
      const m = FENCE.exec(line);
      let lang = m ? m[1] : '';
      const body = [];
      // "```code```" on one line, or text after the fence on the opening line.
      let rest = m ? null : open[1];
      if (rest !== null) {
        const close = rest.indexOf('```');
        if (close >= 0) {
          out.push({ kind: 'code', text: rest.slice(0, close), lang: '' });
          const after = rest.slice(close + 3);
          if (after.trim()) plain.push(after);
          continue;
        }
        body.push(rest);
        lang = '';
      }
      let j = i + 1;
      while (j < lines.length && !/^\s{0,3}```\s*$/.test(lines[j])) body.push(lines[j++]);
      out.push({ kind: 'code', text: body.join('\n'), lang });
      i = j; // skip the closing fence (or run to the end if unterminated)
      continue;
    }
    if (/^>\s?/.test(line)) {
      flushPlain();
      quote.push(line.replace(/^>\s?/, ''));
      continue;
    }
    flushQuote();
    plain.push(line);
  }
  flushPlain(); flushQuote();
  // Drop blank lines that only separated blocks.
  return out.map((b) => (b.kind === 'text' ? { ...b, text: trimBlankLines(b.text, out.length > 1) } : b))
    .filter((b) => b.kind !== 'text' || b.text !== '');
}

function trimBlankLines(s, multi) {
  return multi ? s.replace(/^\n+|\n+$/g, '') : s;
}

function codeBlock(text, lang) {
  const code = h('code', lang ? { class: `lang-${lang.replace(/[^\w-]/g, '')}` } : null, text);
  return h('div', { class: 'code-block' },
    h('div', { class: 'code-block-head' },
      h('span', { class: 'code-lang' }, lang || 'code'),
      copyButton(text, 'Copy', 'code-copy')),
    h('pre', { tabindex: '0' }, code));
}

// Inline tokens: code spans, links, mentions, bold.
const INLINE = /(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)|(https?:\/\/[^\s<>"'`]+)|(^|[^\w@/`\\])@([a-z0-9][a-z0-9_.-]*(?:\/[a-z0-9][a-z0-9_.-]*)?)|\*\*(?=\S)([\s\S]*?\S)\*\*/gi;

export function inline(text, opts = {}) {
  const out = [];
  let last = 0;
  INLINE.lastIndex = 0;
  const re = new RegExp(INLINE.source, INLINE.flags);
  let m;
  while ((m = re.exec(text))) {
    let start = m.index;
    if (m[2] !== undefined) {
      out.push(text.slice(last, start), h('code', { class: 'inline-code' }, m[2]));
      last = re.lastIndex;
    } else if (m[3] !== undefined) {
      const { url, tail } = trimUrl(m[3]);
      const a = link(url);
      out.push(text.slice(last, start), a || url, tail);
      last = re.lastIndex;
    } else if (m[5] !== undefined) {
      const pre = m[4] || '';
      start += pre.length;
      let name = m[5];
      let trail = '';
      while (/[.-]$/.test(name)) { trail = name.slice(-1) + trail; name = name.slice(0, -1); }
      out.push(text.slice(last, start), mention(name, opts), trail);
      last = re.lastIndex;
    } else if (m[6] !== undefined) {
      out.push(text.slice(last, start), h('strong', null, inline(m[6], opts)));
      last = re.lastIndex;
    }
  }
  out.push(text.slice(last));
  return out.filter((x) => x !== '');
}

function trimUrl(raw) {
  let url = raw;
  let tail = '';
  // Trailing punctuation belongs to the sentence, and a ")" only to the URL if balanced.
  for (;;) {
    const c = url.slice(-1);
    if (/[.,;:!?'"*_]/.test(c)) { tail = c + tail; url = url.slice(0, -1); continue; }
    if (c === ')' && (url.match(/\(/g) || []).length < (url.match(/\)/g) || []).length) { tail = c + tail; url = url.slice(0, -1); continue; }
    break;
  }
  return { url, tail };
}

function link(url) {
  let u;
  try { u = new URL(url); } catch { return null; }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return null;
  return h('a', { href: u.href, target: '_blank', rel: 'noopener noreferrer' }, url);
}

function mention(name, { me } = {}) {
  const lower = name.toLowerCase();
  const isAgent = lower.includes('/');
  const owner = lower.split('/')[0];
  let cls = isAgent ? 'mention mention-agent' : 'mention';
  if (me && (lower === me || (isAgent && owner === me))) cls += ' mention-me';
  return h('span', { class: cls, dataset: { mention: lower } }, '@' + name);
}

// Agent handles mentioned in text outside code and quotes (for the composer
// hint; the hub's parser decides for real).
export function agentMentions(text) {
  const found = [];
  for (const b of blocks(String(text || ''))) {
    if (b.kind !== 'text') continue;
    const stripped = b.text.replace(/(`+)[\s\S]*?\1/g, ' ');
    const re = /(^|[^\w@/`\\])@([a-z0-9][a-z0-9_.-]*)\/([a-z0-9][a-z0-9_.-]*)/gi;
    let m;
    while ((m = re.exec(stripped))) {
      const handle = `${m[2]}/${m[3].replace(/[.-]+$/, '')}`.toLowerCase();
      if (!found.includes(handle)) found.push(handle);
    }
  }
  return found;
}
