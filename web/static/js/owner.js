// owner.js — the owner's authority in the app: this browser as a device,
// moderated messages, room ceilings, and refused decisions, wired to the
// live feed.

import { toast } from './dom.js';
import { state, emit } from './store.js';
import { initDevices, loadThisDevice } from './devices.js';
import { loadRequests, upsertRequest } from './requests.js';
import { loadRoomAgents } from './agents.js';

export function initOwner() {
  initDevices();
}

export async function loadOwner() {
  await Promise.all([loadThisDevice(), loadRequests()]);
}

// ownerEvent handles the live events of this module's concern and
// reports whether it did.
export function ownerEvent(ev) {
  const d = ev.data || {};
  switch (ev.type) {
    case 'request':
      upsertRequest(d);
      return true;
    case 'devices':
      emit('devices-changed');
      return true;
    case 'agent.ceiling':
      if (ev.room === state.current) loadRoomAgents(ev.room);
      else state.roomAgents.delete(ev.room);
      return true;
    case 'forgery': {
      const what = d.agent ? `a ${d.kind} decision for @${state.me?.name}/${d.agent}` : 'a device enrollment';
      toast(`Your bridge refused ${what}: ${d.detail || d.reason}. Nothing was done.`, 'error');
      emit('forgery', d);
      return true;
    }
    default:
      return false;
  }
}

