// slash.js — slash commands in the composer. Typing "/" at the start opens a
// popup of the commands that apply in this room; after a command, a popup of
// its arguments (your agents, people not in the room, requests waiting for
// your decision). Enter runs the command instead of posting; "//" at the
// start posts text that begins with "/".

import { api, ApiError } from './api.js';
import { h, avatar, toast } from './dom.js';
import { combobox } from './combobox.js';
import { state, isDM, roomLabel, agentOwner } from './store.js';
import { actions } from './actions.js';
import { confirmDialog } from './dialog.js';
import { awaitingMyDecision, decideApproval } from './approvals.js';
import { renderHeader } from './rooms.js';

const MAX = 8;

const COMMANDS = [
  { name: 'stop', usage: '/stop @owner/agent', help: "stop your agent's running turn", args: agentArgs, when: () => myAgentsHere().length > 0 },
  { name: 'invite', usage: '/invite @name', help: 'add someone to this room', args: inviteArgs, needsArg: true, when: (r) => !isDM(r) },
  { name: 'topic', usage: '/topic text', help: "set this room's topic (/topic - clears it)", needsArg: true, when: (r) => !isDM(r) },
  { name: 'leave', usage: '/leave', help: 'leave this room', when: () => true },
  { name: 'approve', usage: '/approve id', help: 'approve a request waiting for you', args: approvalArgs, when: () => awaitingMyDecision().length > 0 },
  { name: 'deny', usage: '/deny id', help: 'deny a request waiting for you', args: approvalArgs, when: () => awaitingMyDecision().length > 0 },
];
const byName = new Map(COMMANDS.map((c) => [c.name, c]));

function myAgentsHere() {
  return (state.roomAgents.get(state.current) || []).filter((a) => agentOwner(a.handle) === state.me?.name);
}

function agentArgs() {
  return myAgentsHere()
    .sort((x, y) => (y.status === 'working' || y.status === 'needs-approval') - (x.status === 'working' || x.status === 'needs-approval'))
    .map((a) => ({ value: '@' + a.handle, title: '@' + a.handle, sub: a.status || 'offline', avatar: [a.handle, 'agent'] }));
}

function inviteArgs() {
  const members = new Set((state.members.get(state.current) || []).map((m) => m.user));
  return state.users.filter((u) => !members.has(u.name) && u.name !== state.me?.name)
    .map((u) => ({ value: '@' + u.name, title: '@' + u.name, sub: u.display || 'person', avatar: [u.name, 'user'] }));
}

function pendingForMe() {
  const here = state.current;
  return awaitingMyDecision().sort((x, y) => (y.room === here) - (x.room === here) || new Date(x.at) - new Date(y.at));
}

function approvalArgs() {
  return pendingForMe().map((a) => ({
    value: String(a.id), title: `${a.id} · @${a.agent} wants to run ${a.tool || 'a tool'}`,
    sub: `${a.room ? roomLabel(state.rooms.get(a.room) || { name: a.room }) : ''} · hash ${String(a.payloadHash || '').slice(0, 12)}`,
    avatar: [a.agent, 'agent'],
  }));
}

// parse splits "/name rest" (null when text is no command).
export function parse(text) {
  const m = /^\/([a-z]+)(?:\s+([\s\S]*))?$/i.exec(String(text));
  if (!m || String(text).startsWith('//')) return null;
  return { name: m[1].toLowerCase(), arg: (m[2] || '').trim() };
}

export function initSlash(ta, box) {
  const listEl = h('ul', { id: 'slash-list', class: 'mention-list slash-list', role: 'listbox', 'aria-label': 'Commands', hidden: true });
  box.append(listEl);
  let mode = null; // 'command' | 'arg'
  const popup = combobox(ta, listEl, {
    idPrefix: 'slash-opt', className: 'mention-option slash-option', controls: 'slash-list',
    option: (c) => ({
      dataset: { value: c.value, command: c.name || null },
      children: [
        c.avatar ? avatar(c.avatar[0], c.avatar[1], 'avatar-xs') : h('span', { class: 'slash-mark', 'aria-hidden': 'true' }, '/'),
        h('span', { class: 'mention-option-title' }, c.title),
        h('span', { class: 'mention-option-sub' }, c.sub)],
    }),
    insert: (c) => c.value + ' ',
    // Enter on an option already typed out in full falls through, so the
    // command runs.
    passKey: (e, c, typed) => {
      if (e.shiftKey) return true;
      if (e.key === 'Enter' && typed === c.value.toLowerCase() && !(mode === 'command' && c.needsArg)) { popup.close(); return true; }
      return false;
    },
    onClose: () => { mode = null; ta.setAttribute('aria-controls', 'mention-list'); },
  });

  function available() {
    const r = state.rooms.get(state.current);
    return r ? COMMANDS.filter((c) => c.when(r)) : [];
  }

  function update() {
    const v = ta.value;
    const pos = ta.selectionStart;
    if (pos !== ta.selectionEnd || !v.startsWith('/') || v.startsWith('//')) { close(); return; }
    const before = v.slice(0, pos);
    let m = /^\/([a-z]*)$/i.exec(before);
    let token, items;
    if (m) {
      const q = m[1].toLowerCase();
      mode = 'command';
      token = { start: 0, end: pos, query: q };
      items = available().filter((c) => c.name.startsWith(q))
        .map((c) => ({ value: '/' + c.name, title: c.usage, sub: c.help, name: c.name, needsArg: !!c.needsArg }));
    } else if ((m = /^\/([a-z]+)\s+((?:\S+\s+)*)(\S*)$/i.exec(before)) && byName.get(m[1].toLowerCase())?.args && (m[2] === '' || m[3] !== '')) {
      // The first argument's options open at once; later ones once typed.
      const cmd = byName.get(m[1].toLowerCase());
      const q = m[3].toLowerCase();
      mode = 'arg';
      token = { start: pos - m[3].length, end: pos, query: q };
      items = cmd.args().filter((o) => o.value.toLowerCase().includes(q.replace(/^@/, '')));
    } else { close(); return; }
    popup.show(items.slice(0, MAX), token);
  }

  // close does nothing when the popup is closed already (the mention
  // popup's aria-controls stays).
  function close() {
    if (popup.isOpen()) popup.close();
  }

  ta.addEventListener('input', update);
  ta.addEventListener('click', update);
  ta.addEventListener('blur', () => setTimeout(close, 100));

  return {
    handleKey: popup.handleKey,
    close,
    // The popup owns "@" completion after /stop and /invite.
    ownsArgs: () => { const p = parse(ta.value); return !!(p && byName.get(p.name)?.args); },
  };
}

// hint says what a command will do, for the composer's hint line (null
// when text is no command).
export function hint(text) {
  const p = parse(text);
  if (!p) return null;
  const c = byName.get(p.name);
  return c ? `${c.usage} — ${c.help}` : `/${p.name} is not a command. Commands: ${COMMANDS.map((x) => '/' + x.name).join(' ')}. Start with // to send text that begins with /.`;
}

/**
 * run(text) → true if text was a command (run, or refused with an error
 * thrown for the composer to show); false if it is a message to post.
 */
export async function run(text) {
  const p = parse(text);
  if (!p) return false;
  const c = byName.get(p.name);
  if (!c) throw new Error(`/${p.name} is not a command. Commands: ${COMMANDS.map((x) => '/' + x.name).join(' ')}. To send text that begins with /, start it with //.`);
  const room = state.current;
  const r = state.rooms.get(room);
  if (!r) throw new Error('Open a room first.');
  if (!c.when(r) && !['approve', 'deny', 'stop'].includes(c.name)) throw new Error(`${c.usage} does not apply in ${roomLabel(r)}.`);
  await HANDLERS[c.name](p.arg, r);
  return true;
}

const HANDLERS = {
  async stop(arg) {
    let handle = arg.split(/\s+/)[0].replace(/^@/, '').toLowerCase();
    if (!handle) {
      const busy = myAgentsHere().filter((a) => a.status === 'working' || a.status === 'needs-approval');
      if (busy.length !== 1) throw new Error(busy.length ? 'Several of your agents are working here: name one, e.g. /stop @' + busy[0].handle : 'None of your agents is working in this room. Name one: /stop @you/agent');
      handle = busy[0].handle;
    }
    if (!handle.includes('/')) throw new Error(`Name an agent as @owner/agent, e.g. /stop @${state.me.name}/${handle}`);
    if (agentOwner(handle) !== state.me.name) throw new Error(`Only @${agentOwner(handle)} can stop @${handle}; ask them.`);
    await api.interrupt(handle);
    toast(`Stopping @${handle}'s turn`);
  },

  async invite(arg, r) {
    const names = arg.split(/[\s,]+/).map((s) => s.replace(/^@/, '').toLowerCase()).filter(Boolean);
    if (!names.length) throw new Error('Name someone to add: /invite @name');
    const added = [];
    for (const n of names) {
      if (n.includes('/')) throw new Error(`@${n} is an agent: add agents from the Agents panel (its owner is asked first).`);
      try { await api.addMember(r.name, n); added.push('@' + n); } catch (ex) {
        if (added.length) toast(`Added ${added.join(', ')} to ${roomLabel(r)}`);
        throw ex;
      }
    }
    toast(`Added ${added.join(', ')} to ${roomLabel(r)}`);
    await actions.refreshRooms();
  },

  async topic(arg, r) {
    if (!arg) throw new Error(`Write the new topic after /topic (or /topic - to clear it). Now: ${r.topic ? '“' + r.topic + '”' : 'none'}`);
    const topic = arg === '-' ? '' : arg.replace(/\s+/g, ' ');
    let room;
    try { room = await api.setTopic(r.name, topic); } catch (ex) {
      if (ex instanceof ApiError && ex.missing) throw new Error('This hub cannot change topics yet.');
      throw ex;
    }
    Object.assign(r, { topic: (room && room.topic) ?? topic });
    renderHeader();
    toast(topic ? `Topic set: ${topic}` : 'Topic cleared');
  },

  async leave(arg, r) {
    if (!(await confirmDialog(`Leave ${roomLabel(r)}?`, 'Leave room'))) return;
    await api.removeMember(r.name, state.me.name);
    await actions.refreshRooms();
    actions.go(null);
  },

  approve: (arg) => decide(arg, 'approve'),
  deny: (arg) => decide(arg, 'deny'),
};

async function decide(arg, decision) {
  const pending = pendingForMe();
  const id = arg.replace(/^#/, '').split(/\s+/)[0];
  let a;
  if (id) {
    a = pending.find((x) => String(x.id) === id);
    if (!a) throw new Error(`No request ${id} waits for your decision.${pending.length ? ' Waiting: ' + pending.map((x) => x.id).join(', ') + '.' : ''}`);
  } else {
    const here = pending.filter((x) => x.room === state.current);
    const pool = here.length ? here : pending;
    if (pool.length !== 1) {
      throw new Error(pool.length
        ? `Several requests wait for you: ${pool.map((x) => `/${decision} ${x.id} (@${x.agent}: ${x.tool})`).join(', ')}`
        : 'No request waits for your decision.');
    }
    a = pool[0];
  }
  await decideApproval(a, decision);
  toast(`${decision === 'approve' ? 'Approved' : 'Denied'}: @${a.agent} ${a.tool || ''}`.trim());
}
