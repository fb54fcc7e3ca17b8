// Package chat holds the nouns every other part of the hub shares: users,
// rooms, messages and mentions, agents, bridges, approvals, receipts, the
// timeline, and the events of the log with their payloads. It decides
// nothing and stores nothing; it imports only authz, wire and the root
// error package, never eventlog, store or room.
package chat
