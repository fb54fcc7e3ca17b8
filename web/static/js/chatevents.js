// chatevents.js — the live events of the chat around messages: a message
// changed (edited, deleted, streamed), a thread's summary, reactions. Each
// updates the message wherever it is loaded and tells the views.

import { emit, findMessage, logOf } from './store.js';

// applyChatEvent returns true when it handled ev.
export function applyChatEvent(ev) {
  const d = ev.data || {};
  switch (ev.type) {
    case 'message.updated': {
      const m = { ...d, room: d.room || ev.room };
      const log = logOf(m);
      if (log.byId.has(m.id)) log.byId.set(m.id, { ...log.byId.get(m.id), ...m });
      // A root shows in its thread too; its summary may be newer than m's.
      emit('updated', log.byId.get(m.id) || m);
      return true;
    }
    case 'thread': {
      const root = findMessage(d.root, ev.room);
      if (root) root.replies = d.replies;
      emit('thread', { room: ev.room, root: d.root, replies: d.replies });
      return true;
    }
    case 'reactions': {
      const m = findMessage(d.messageId, ev.room);
      if (m) m.reactions = d.reactions || [];
      emit('reactions', { room: ev.room, messageId: d.messageId, thread: d.thread || 0, reactions: d.reactions || [] });
      return true;
    }
    default:
      return false;
  }
}

// storeMessage puts a message the API answered with into its log and
// tells the views, as a live event would.
export function storeMessage(m) {
  const log = logOf(m);
  if (log.add(m)) emit(m.thread ? 'reply' : 'message', m);
  else emit('updated', m);
}
