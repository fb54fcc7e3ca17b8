// actions.js — app-level actions that feature modules call; app.js fills
// them in at start (this keeps imports one-way).

export const actions = {
  refreshRooms: async () => {},
  go: (_room) => {},
};
