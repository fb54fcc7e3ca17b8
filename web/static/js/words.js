// words.js — the owner's own words to their agents, signed. When you post a
// message that addresses one of your own agents, this browser signs, for
// each such agent, a "message" statement naming its bridge, the agent, the
// room, the thread, the SHA-256 of the exact text sent, each file's name
// and SHA-256 (of the bytes this browser uploaded) and the turn you expect
// the words to reach. The hub relays it beside the message; the bridge
// gives your words your authority (your policy, a clean turn) only when it
// verifies. Without an enrolled device your words go as a teammate's: the
// agent asks before every side effect (the composer says so).

import { h } from './dom.js';
import { state, agentByHandle, isMine } from './store.js';
import { agentMentions } from './render/mentions.js';
import { sign, textHash, fileHash, signingAvailable, loadDevice } from './signing.js';
import { thisDevice, enrollPrompt } from './devices.js';

// agentDM is the agent a person's DM with an agent is with ("dm:user:owner+agent").
function agentDM(room) {
  const m = /^dm:([^:]+):([^:+]+)\+([^:+]+)$/.exec(String(room || ''));
  return m ? { user: m[1], handle: `${m[2]}/${m[3]}` } : null;
}

// addressed lists the agents a message in room addresses, as the hub reads
// it: its agent mentions outside code and quotes, and in your DM with an
// agent, that agent (no mention needed).
export function addressed(room, text) {
  const hs = agentMentions(text);
  const dm = agentDM(room);
  if (dm && dm.user === state.me?.name && !hs.includes(dm.handle)) hs.unshift(dm.handle);
  return hs;
}

// canSign says whether this browser can sign for agent a: it is enrolled
// with the bridge that runs it.
function canSign(a, rec = thisDevice.rec) {
  return !!(signingAvailable() && rec && rec.id && a && a.bridge && (rec.bridges || []).includes(a.bridge));
}

// unsigned lists your own agents a message would address, run by a bridge
// now, whose words this browser cannot sign (not enrolled with that bridge).
// One no bridge runs gets nothing (the hint for the mention says so).
export function unsigned(room, text) {
  if (!state.me) return [];
  return addressed(room, text).filter((hd) => {
    const a = agentByHandle(hd);
    return isMine(hd) && a && a.bridge && !canSign(a);
  });
}

/**
 * signWords returns the "signed" list of a post: one message statement per
 * agent of yours it addresses that this browser can sign for. text is
 * exactly what is sent; thread the root it replies under (0: the channel);
 * files the refs being posted (uploads.js: {name, blob}); turns the turn per
 * handle the post names (the stale-turn guard), also the turn signed.
 */
export async function signWords({ room, text, thread, files, turns }) {
  const rec = await loadDevice(state.me.name);
  const mine = addressed(room, text).filter((hd) => isMine(hd) && canSign(agentByHandle(hd), rec));
  if (!mine.length) return [];
  const st = { kind: 'message', room, textHash: await textHash(text) };
  // A person's DM with an agent is one conversation: its steers carry no thread.
  if (thread && !agentDM(room)) st.thread = String(thread);
  if (files && files.length) st.files = await Promise.all(files.map(async (f) => ({ name: f.name, sha256: await fileHash(f.blob) })));
  const out = [];
  for (const hd of mine) {
    const a = agentByHandle(hd);
    out.push(await sign(state.me.name, { ...st, agent: hd, bridge: a.bridge, turn: (turns && (turns[a.handle] || turns[hd])) || undefined }));
  }
  return out;
}

// wordsHint is the composer's note when some of your own agents the text
// addresses would get your words unsigned: what that means and how to
// enroll. null when there is nothing to say.
export function wordsHint(room, text) {
  const hs = unsigned(room, text);
  if (!hs.length) return null;
  const who = hs.map((hd) => '@' + hd).join(', ');
  return h('div', { class: 'mode-hint words-hint', dataset: { agents: hs.join(' ') } },
    h('span', { class: 'mode-text' },
      `Unsigned: ${who} will take these words as a teammate's, not yours — every side effect waits for your approval. `),
    enrollPrompt('Speaking to your agent as its owner'));
}
