// render/mentions.js — the agent handles a text addresses, exactly as the
// hub reads them (chat.ParseMentions, authz.QuotedParts): mentions outside
// fenced code, `inline code`, "> " quotes and forwarded text, not inside an
// e-mail address or a path. The composer's hint uses it, and so does the
// signing of the owner's words (words.js): the hub refuses a signature for
// an agent the message does not address, so the two must agree
// (TestMentionsParsedAsTheHubDoes compares them).
//
// The hub works on UTF-8 bytes, this on UTF-16 code units; every character
// either one looks at is ASCII, so the spans fall in the same places.

const MAX_NAME = 32;

// Go's unicode.IsSpace (JavaScript's \s differs: it has U+FEFF, not U+0085).
const SPACE = /[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]/;
const trimSpace = (s) => {
  let a = 0;
  let b = s.length;
  while (a < b && SPACE.test(s[a])) a++;
  while (b > a && SPACE.test(s[b - 1])) b--;
  return s.slice(a, b);
};

const isAlnum = (c) => /^[a-zA-Z0-9]$/.test(c);
const isNameChar = (c) => c !== undefined && /^[a-zA-Z0-9_.-]$/.test(c);

const asciiLower = (s) => s.replace(/[A-Z]/g, (c) => c.toLowerCase());

function lineAt(text, i) {
  const k = text.indexOf('\n', i);
  return k >= 0 ? [k, k + 1] : [text.length, text.length];
}

const stripCR = (text, end) => (end > 0 && text[end - 1] === '\r' ? end - 1 : end);
const trimmedEnd = (text, end) => text.slice(0, end).replace(/[\r\n]+$/, '').length;

function indent(line) {
  for (let k = 0; k < 3 && line.startsWith(' '); k++) line = line.slice(1);
  return line;
}

function backticks(s, i = 0, end = s.length) {
  let n = 0;
  while (i + n < end && s[i + n] === '`') n++;
  return n;
}

function fenceOpen(line) {
  line = indent(line);
  const n = backticks(line);
  return n < 3 || line.slice(n).includes('`') ? 0 : n;
}

function fenceClose(line, open) {
  line = indent(line);
  const n = backticks(line);
  return n >= open && trimSpace(line.slice(n)) === '';
}

const isQuoteLine = (line) => indent(line).startsWith('>');

function isForwardMarker(line) {
  const t = trimSpace(line);
  if (t.startsWith('---') && asciiLower(t.replace(/^[- ]+|[- ]+$/g, '')) === 'forwarded message') return true;
  return asciiLower(t.slice(0, 14)) === 'forwarded from';
}

// quotedParts is authz.QuotedParts: fenced code, "> " quote runs and
// forwarded text, as [{kind, start, end}].
export function quotedParts(text) {
  const parts = [];
  for (let i = 0; i < text.length;) {
    const [le, next] = lineAt(text, i);
    const line = text.slice(i, le);
    const n = fenceOpen(line);
    if (n > 0) {
      let end = trimmedEnd(text, text.length);
      let j = text.length;
      for (let k = next; k < text.length;) {
        const [kle, knext] = lineAt(text, k);
        if (fenceClose(text.slice(k, kle), n)) { end = stripCR(text, kle); j = knext; break; }
        k = knext;
      }
      parts.push({ kind: 'code', start: i, end: Math.max(end, i) });
      i = j;
    } else if (isForwardMarker(line)) {
      parts.push({ kind: 'forwarded', start: i, end: Math.max(trimmedEnd(text, text.length), stripCR(text, le)) });
      return parts;
    } else if (isQuoteLine(line)) {
      let end = stripCR(text, le);
      let j = next;
      while (j < text.length) {
        const [jle, jnext] = lineAt(text, j);
        if (!isQuoteLine(text.slice(j, jle))) break;
        end = stripCR(text, jle);
        j = jnext;
      }
      parts.push({ kind: 'quote', start: i, end });
      i = j;
    } else {
      i = next;
    }
  }
  return parts;
}

// codeSpans: the `inline code` spans outside the fenced blocks.
function codeSpans(text, parts) {
  const spans = [];
  let a = 0;
  const scan = (b) => {
    for (let i = a; i < b;) {
      if (text[i] !== '`') { i++; continue; }
      const n = backticks(text, i, b);
      let closed = -1;
      for (let k = i + n; k < b;) {
        if (text[k] !== '`') { k++; continue; }
        const m = backticks(text, k, b);
        if (m === n) { closed = k + m; break; }
        k += m;
      }
      if (closed < 0) { i += n; continue; }
      spans.push({ kind: 'code', start: i, end: closed });
      i = closed;
    }
  };
  for (const p of parts) {
    if (p.kind === 'code') { scan(p.start); a = p.end; }
  }
  scan(text.length);
  return spans;
}

// mayStart: the '@' at i does not follow a name character, '/', '@', '`',
// '\' or any letter or digit (an e-mail address, a path, a fragment).
function mayStart(text, i) {
  if (i === 0) return true;
  let c = text[i - 1];
  const code = text.charCodeAt(i - 1);
  if (code >= 0xdc00 && code <= 0xdfff && i >= 2) {
    const hi = text.charCodeAt(i - 2);
    if (hi >= 0xd800 && hi <= 0xdbff) c = text.slice(i - 2, i);
  }
  return !(isNameChar(c) || c === '/' || c === '@' || c === '`' || c === '\\' || /^[\p{L}\p{Nd}]$/u.test(c));
}

// scanName reads a name at i: [name, end] or null.
function scanName(text, i) {
  let j = i;
  while (j < text.length && isNameChar(text[j])) j++;
  let end = j;
  while (end > i && (text[end - 1] === '.' || text[end - 1] === '-')) end--;
  if (end < j && j < text.length && (text[j] === '@' || text[j] === '/')) return null;
  const n = end - i;
  if (n === 0 || n > MAX_NAME || !isAlnum(text[i])) return null;
  return [asciiLower(text.slice(i, end)), end];
}

// parseMention reads the mention at '@' index at: {agent?, user?, end} or null.
function parseMention(text, at) {
  const u = scanName(text, at + 1);
  if (!u) return null;
  const [user, end] = u;
  if (text[end] === '/') {
    const a = scanName(text, end + 1);
    if (!a || text[a[1]] === '/' || text[a[1]] === '@') return null;
    return { agent: `${user}/${a[0]}`, end: a[1] };
  }
  if (text[end] === '@') return null; // user@host
  return { user, end };
}

// agentMentions returns the agent handles (owner/name, lower-case) text
// addresses, each once, in order of first mention.
export function agentMentions(text) {
  text = String(text || '');
  const skip = [...quotedParts(text)];
  skip.push(...codeSpans(text, skip));
  skip.sort((x, y) => x.start - y.start);
  const found = [];
  let next = 0;
  for (let i = 0; i < text.length; i++) {
    if (text[i] !== '@') continue;
    while (next < skip.length && skip[next].end <= i) next++;
    if ((next < skip.length && skip[next].start <= i) || !mayStart(text, i)) continue;
    const m = parseMention(text, i);
    if (!m) continue;
    if (m.agent && !found.includes(m.agent)) found.push(m.agent);
    i = m.end - 1;
  }
  return found;
}
