// render/reactions.js — the reactions under a message: each emoji with its
// count; yours are pressed, and a click adds or takes back yours. Emoji are
// text (the hub accepts any short string, e.g. ":shipit:").

import { h } from '../dom.js';
import { state, emit } from '../store.js';

export function reactionsEl(m) {
  const list = (m.reactions || []).filter((r) => r.count > 0);
  if (!list.length) return null;
  const me = state.me?.name;
  return h('div', { class: 'reactions', role: 'group', 'aria-label': 'Reactions' }, list.map((r) => {
    const mine = (r.users || []).includes(me);
    const who = (r.users || []).map((u) => '@' + u).join(', ');
    return h('button', {
      type: 'button', class: `reaction${mine ? ' mine' : ''}`, 'aria-pressed': String(mine),
      dataset: { emoji: r.emoji, count: r.count }, title: `${who} reacted with ${r.emoji}`,
      onclick: () => emit('react', { message: m, emoji: r.emoji, on: !mine }),
    }, h('span', { class: 'reaction-emoji' }, r.emoji), h('span', { class: 'reaction-count' }, String(r.count)));
  }));
}
