// render/mentions.js — the agent handles a text mentions outside code and
// quotes, the way the hub's parser reads them (for the composer's hint; the
// hub decides for real).

const FENCE_OPEN = /^\s{0,3}```/;
const FENCE_CLOSE = /^\s{0,3}```\s*$/;

// prose returns the text's lines outside fenced code and "> " quotes, with
// inline code spans blanked.
function prose(text) {
  const out = [];
  const lines = String(text || '').split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (FENCE_OPEN.test(line)) {
      const rest = line.replace(/^\s{0,3}```/, '');
      if (rest.includes('```')) { out.push(rest.slice(rest.indexOf('```') + 3)); continue; }
      let j = i + 1;
      while (j < lines.length && !FENCE_CLOSE.test(lines[j])) j++;
      i = j;
      continue;
    }
    if (/^>\s?/.test(line)) continue;
    out.push(line);
  }
  return out.join('\n').replace(/(`+)[\s\S]*?\1/g, ' ');
}

export function agentMentions(text) {
  const found = [];
  const re = /(^|[^\w@/`\\])@([a-z0-9][a-z0-9_.-]*)\/([a-z0-9][a-z0-9_.-]*)/gi;
  const s = prose(text);
  let m;
  while ((m = re.exec(s))) {
    const handle = `${m[2]}/${m[3].replace(/[.-]+$/, '')}`.toLowerCase();
    if (!found.includes(handle)) found.push(handle);
  }
  return found;
}

