// The op table of the v1 protocol: each op's request fields, their types and
// whether they are required, in the server's order (the order the server
// checks them, so the first error named matches). It mirrors
// src/protocol/requests.json, and the conformance test holds the two equal.

export type FieldType =
  | 'string' // a string
  | 'table_name' // [A-Za-z0-9_-]{1,64}
  | 'key' // non-empty UTF-8, at most 1024 bytes, no U+0000
  | 'json' // any JSON value, null included
  | 'number' // a finite number
  | 'unsigned' // an integer from 0 to 2^53-1 (what a JS number holds exactly)
  | 'bool'
  | 'path' // an array of strings
  | 'scan_limit' // an integer from 1 to 10000
  | 'near_limit' // an integer from 1 to 10000
  | 'sync_limit' // an integer, at least 1
  | 'scan_after' // a key, or null
  | 'sync_after' // [group, table, key], or null
  | 'box' // [width, height], two numbers
  | 'changes'; // push's array of change objects

export interface FieldSpec {
  readonly name: string;
  readonly type: FieldType;
  readonly required: boolean;
}

export interface OpSpec {
  readonly name: string;
  readonly fields: readonly FieldSpec[];
}

function req(name: string, type: FieldType): FieldSpec {
  return { name, type, required: true };
}
function opt(name: string, type: FieldType): FieldSpec {
  return { name, type, required: false };
}

const table = req('table', 'table_name');
const key = req('key', 'key');

/** Every op, in the server's order. */
export const OPS: readonly OpSpec[] = [
  // Two forms, user and secret or a token: the server requires one of them.
  { name: 'login', fields: [opt('user', 'string'), opt('secret', 'string'), opt('token', 'string')] },
  { name: 'logout', fields: [] },
  { name: 'ping', fields: [] },
  { name: 'echo', fields: [req('data', 'json')] },
  { name: 'get', fields: [table, key] },
  { name: 'has', fields: [table, key] },
  { name: 'set', fields: [table, key, req('value', 'json')] },
  { name: 'delete', fields: [table, key] },
  { name: 'add', fields: [table, key, opt('path', 'path'), req('delta', 'number')] },
  { name: 'merge', fields: [table, key, req('patch', 'json')] },
  { name: 'all', fields: [table, opt('after', 'scan_after'), opt('limit', 'scan_limit')] },
  { name: 'stats', fields: [] },
  { name: 'push', fields: [req('device', 'string'), req('changes', 'changes')] },
  { name: 'pull', fields: [opt('since', 'unsigned'), opt('limit', 'sync_limit')] },
  { name: 'bootstrap', fields: [opt('limit', 'sync_limit'), opt('after', 'sync_after')] },
  { name: 'wait', fields: [req('since', 'unsigned'), opt('timeout_ms', 'unsigned')] },
  {
    name: 'near',
    fields: [
      table,
      req('lat', 'number'),
      req('lon', 'number'),
      opt('limit', 'near_limit'),
      opt('radius_m', 'number'),
      opt('box_m', 'box'),
      opt('values', 'bool'),
      opt('columns', 'bool'),
    ],
  },
  // At most one of key and prefix; neither watches the whole table.
  {
    name: 'watch',
    fields: [table, opt('key', 'key'), opt('prefix', 'string'), opt('since', 'unsigned'), opt('initial', 'bool')],
  },
  { name: 'unwatch', fields: [req('watch', 'unsigned')] },
];

/** The fields of each element of push's `changes`, in the server's order. */
export const PUSH_CHANGE_FIELDS: readonly FieldSpec[] = [
  req('seq', 'unsigned'),
  req('table', 'string'),
  req('key', 'string'),
  req('group', 'string'),
  req('value', 'json'),
];

const byName: ReadonlyMap<string, OpSpec> = new Map(OPS.map((spec) => [spec.name, spec]));

/** The spec of `name`, or undefined for a name that is no op. */
export function findOp(name: string): OpSpec | undefined {
  return byName.get(name);
}

/** Ops that need no login (the rest get unauthorized before it). */
export const OPS_WITHOUT_LOGIN: ReadonlySet<string> = new Set(['login', 'ping', 'echo']);
