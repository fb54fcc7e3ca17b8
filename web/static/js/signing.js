// signing.js — this browser as one of the owner's devices. Decisions that
// let an agent do more (approve a call, add it to a room, widen its policy
// or a room's ceiling, forward a held message) are signed here, and the
// agent's bridge verifies the signature against the devices it enrolled
// itself: the hub only relays them. The owner's own words to their agents
// are signed here too (a "message" statement, words.js), so a hub cannot
// put words in the owner's mouth. Every statement names the bridge it is
// for: the bridge refuses one naming another.
//
// The key is a non-extractable WebCrypto ECDSA P-256 key kept in IndexedDB
// (per origin, per user), or a passkey (WebAuthn, ES256). Both need a
// secure page: https:// or localhost.

import { api } from './api.js';
import { agentByHandle } from './store.js';

const DB = 'wheelhouse-devices';
const STORE = 'devices';
const ITERATIONS = 100000; // authz.EnrollIterations
const TTL_MS = 10 * 60 * 1000; // a signed decision is good for ten minutes

// The decision word of each statement kind (authz.StatementDecision).
const DECISION = { approval: 'approve', policy: 'set', consent: 'add', ceiling: 'set', forward: 'forward', message: 'say' };

export function signingAvailable() {
  return !!(window.isSecureContext && window.crypto && crypto.subtle && window.indexedDB);
}

export function passkeysAvailable() {
  return signingAvailable() && typeof window.PublicKeyCredential === 'function' && !!navigator.credentials;
}

// Why this page cannot sign, in words ("" if it can).
export function whyNotSigning() {
  if (!window.isSecureContext) return 'This page is not a secure context (plain http on a network address), so the browser offers no signing keys here. Open Wheelhouse over https:// or on localhost.';
  if (!window.crypto || !crypto.subtle) return 'This browser has no WebCrypto.';
  if (!window.indexedDB) return 'This browser cannot keep a key (no IndexedDB).';
  return '';
}

// ---- IndexedDB: one record per user name ----

function db() {
  return new Promise((resolve, reject) => {
    const req = indexedDB.open(DB, 1);
    req.onupgradeneeded = () => req.result.createObjectStore(STORE);
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

async function idb(mode, fn) {
  const d = await db();
  try {
    return await new Promise((resolve, reject) => {
      const tx = d.transaction(STORE, mode);
      const req = fn(tx.objectStore(STORE));
      tx.oncomplete = () => resolve(req && req.result);
      tx.onerror = () => reject(tx.error);
      tx.onabort = () => reject(tx.error);
    });
  } finally {
    d.close();
  }
}

// This browser's device for user, or null.
export async function loadDevice(user) {
  if (!signingAvailable()) return null;
  try { return (await idb('readonly', (s) => s.get(user))) || null; } catch { return null; }
}

async function saveDevice(user, rec) {
  await idb('readwrite', (s) => s.put(rec, user));
}

export async function forgetDevice(user) {
  await idb('readwrite', (s) => s.delete(user));
}

// ---- encodings ----

export function b64url(buf) {
  const b = new Uint8Array(buf);
  let s = '';
  for (const x of b) s += String.fromCharCode(x);
  return btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function b64(buf) {
  const b = new Uint8Array(buf);
  let s = '';
  for (const x of b) s += String.fromCharCode(x);
  return btoa(s);
}

function fromB64url(s) {
  const t = s.replace(/-/g, '+').replace(/_/g, '/');
  const bin = atob(t + '='.repeat((4 - (t.length % 4)) % 4));
  return Uint8Array.from(bin, (c) => c.charCodeAt(0));
}

// canonical is RFC 8785 (JCS) for the values statements hold: strings,
// integers, booleans, arrays and objects. JSON.stringify writes strings and
// numbers as JCS does; keys sort by UTF-16 code units, as Array.sort does.
export function canonical(v) {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object') {
    const keys = Object.keys(v).filter((k) => v[k] !== undefined && v[k] !== null && v[k] !== '').sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`).join(',')}}`;
  }
  return JSON.stringify(v);
}

const utf8 = (s) => new TextEncoder().encode(s);

// ---- enrollment ----

// The code as a person typed it: no case, no dashes, O/I/L read as 0/1/1.
export function normalizeCode(s) {
  return String(s).toUpperCase().replace(/[\s-]/g, '').replace(/O/g, '0').replace(/[IL]/g, '1');
}

async function enrollProof(code, bridge, enrollment) {
  const base = await crypto.subtle.importKey('raw', utf8(normalizeCode(code)), 'PBKDF2', false, ['deriveKey']);
  const key = await crypto.subtle.deriveKey(
    { name: 'PBKDF2', hash: 'SHA-256', salt: utf8(`wheelhouse-enroll:${bridge}`), iterations: ITERATIONS },
    base, { name: 'HMAC', hash: 'SHA-256', length: 256 }, false, ['sign']);
  const body = canonical({ v: 1, type: 'enroll', bridge, ...enrollment });
  return b64url(await crypto.subtle.sign('HMAC', key, utf8(body)));
}

/**
 * enroll({user, name, code, bridge, passkey}) creates this browser's key (or
 * passkey) if it has none, and has the bridge trust it: the public key goes
 * through the hub with a MAC under the code the bridge showed the owner, so
 * the hub cannot put its own key in its place.
 */
export async function enroll({ user, name, code, bridge, passkey }) {
  if (!signingAvailable()) throw new Error(whyNotSigning());
  let rec = await loadDevice(user);
  if (rec && passkey !== undefined && !!passkey !== (rec.kind === 'webauthn')) rec = null; // a new kind of key
  if (!rec) rec = passkey ? await newPasskey(user, name) : await newKey(name);
  rec.name = name;
  const enrollment = { name, kind: rec.kind, publicKey: rec.publicKey };
  if (rec.kind === 'webauthn') Object.assign(enrollment, { credentialId: rec.credentialId, rpId: rec.rpId, origin: rec.origin });
  const proof = await enrollProof(code, bridge, enrollment);
  const d = await api.enrollDevice({ bridge, ...enrollment, proof });
  rec.id = d.device.id;
  rec.bridges = [...new Set([...(rec.bridges || []), d.bridge])];
  await saveDevice(user, rec);
  return rec;
}

async function newKey(name) {
  const kp = await crypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, false, ['sign', 'verify']);
  const spki = await crypto.subtle.exportKey('spki', kp.publicKey);
  return { kind: 'webcrypto', name, keyPair: kp, publicKey: b64(spki) };
}

async function newPasskey(user, name) {
  const rpId = location.hostname;
  const cred = await navigator.credentials.create({
    publicKey: {
      rp: { id: rpId, name: 'Wheelhouse' },
      user: { id: utf8(`${user}@${location.host}`), name: user, displayName: `@${user} · ${name}` },
      challenge: crypto.getRandomValues(new Uint8Array(32)),
      pubKeyCredParams: [{ type: 'public-key', alg: -7 }], // ES256: the bridge verifies P-256 only
      authenticatorSelection: { userVerification: 'required', residentKey: 'preferred' },
      attestation: 'none',
      timeout: 120000,
    },
  });
  const spki = cred.response.getPublicKey && cred.response.getPublicKey();
  if (!spki) throw new Error('This authenticator did not give its public key; use a browser key instead.');
  return { kind: 'webauthn', name, publicKey: b64(spki), credentialId: b64url(cred.rawId), rpId, origin: location.origin };
}

// ---- signing ----

// bridgeOf is the id of the bridge that runs an agent, as GET /agents
// shows it to the owner ("" when unknown).
export function bridgeOf(handle) {
  const a = agentByHandle(String(handle || '').replace(/^@/, ''));
  return (a && a.bridge) || '';
}

/**
 * sign(user, fields) signs a statement (kind, agent and the kind's fields)
 * with this browser's device and returns what the API takes as "signed".
 * The statement names the agent's bridge (fields.bridge, or the one the
 * agent list shows). Throws NoDeviceError when this browser is not enrolled.
 */
export async function sign(user, fields) {
  const rec = await loadDevice(user);
  if (!rec || !rec.id) throw new NoDeviceError();
  const bridge = fields.bridge || bridgeOf(fields.agent);
  if (!bridge) throw new Error(`This browser does not know which bridge runs @${fields.agent}, so it cannot sign for it: reload the page once the agent is online.`);
  const st = {
    v: 1, decision: DECISION[fields.kind], ...fields, bridge,
    expires: new Date(Date.now() + TTL_MS).toISOString().replace(/\.\d{3}Z$/, 'Z'),
    nonce: b64url(crypto.getRandomValues(new Uint8Array(18))),
  };
  const statement = canonical(st);
  if (rec.kind === 'webauthn') {
    const challenge = await crypto.subtle.digest('SHA-256', utf8(statement));
    const a = await navigator.credentials.get({
      publicKey: {
        challenge, rpId: rec.rpId, userVerification: 'required', timeout: 120000,
        allowCredentials: [{ type: 'public-key', id: fromB64url(rec.credentialId) }],
      },
    });
    return {
      statement, device: rec.id, sig: b64url(a.response.signature),
      authData: b64url(a.response.authenticatorData), clientData: b64url(a.response.clientDataJSON),
    };
  }
  const sig = await crypto.subtle.sign({ name: 'ECDSA', hash: 'SHA-256' }, rec.keyPair.privateKey, utf8(statement));
  return { statement, device: rec.id, sig: b64url(sig) };
}

// signIfEnrolled is sign, or undefined when this browser has no device (the
// hub then says whether the decision needed one).
export async function signIfEnrolled(user, fields) {
  try {
    return await sign(user, fields);
  } catch (ex) {
    if (ex instanceof NoDeviceError) return undefined;
    throw ex;
  }
}

export class NoDeviceError extends Error {
  constructor() { super('This browser is not enrolled as one of your devices.'); }
}

// SHA-256 of text, lower-case hex (authz.TextHash).
export async function textHash(text) {
  return hex(await crypto.subtle.digest('SHA-256', utf8(text)));
}

// fileHash is the SHA-256 of a file's bytes (a Blob or an ArrayBuffer),
// lower-case hex (authz.FileHash).
export async function fileHash(data) {
  const buf = data instanceof Blob ? await data.arrayBuffer() : data;
  return hex(await crypto.subtle.digest('SHA-256', buf));
}

// downloadFile fetches a file once and returns its bytes with their
// SHA-256, lower-case hex (authz.FileHash): what a forward names the file
// by, never the hub's word. Whoever shows the file shows these bytes, so
// the bytes the owner opens are the bytes signed.
export async function downloadFile(url, name) {
  if (!url) throw new Error(`The hub gave no address of its own for ${name}, so this browser cannot vouch for it.`);
  const r = await fetch(url, { credentials: 'same-origin' });
  if (!r.ok) throw new Error(`This browser could not read ${name} (${r.status}), so it cannot vouch for it.`);
  const bytes = await r.arrayBuffer();
  return { sha256: hex(await crypto.subtle.digest('SHA-256', bytes)), bytes, type: r.headers.get('Content-Type') || '' };
}

const hex = (buf) => [...new Uint8Array(buf)].map((x) => x.toString(16).padStart(2, '0')).join('');

// Reasons the bridge (or the hub) gives for a decision it could not take as signed.
export const SIGNATURE_REASONS = new Set(['signature-required', 'unknown-device', 'device-revoked', 'bad-signature', 'wrong-statement', 'signature-expired', 'replayed']);
