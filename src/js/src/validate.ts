// Checks a request against the op table before it is sent, the way the
// server's decoder does (src/server/internal/wire/request_decoder.cc): the
// fields in the table's order, the first failure named, with the server's
// code and words. A request that passes may still be refused by the server
// for what only it knows (permissions, a missing geo index, ranges of
// near's numbers).

import { SkiffError } from './errors.js';
import type { FieldSpec, OpSpec } from './ops.js';
import { PUSH_CHANGE_FIELDS } from './ops.js';
import {
  MAX_KEY_BYTES,
  MAX_NEAR_LIMIT,
  MAX_SCAN_LIMIT,
  MAX_TABLE_NAME_BYTES,
  hasLoneSurrogate,
  utf8Length,
} from './limits.js';

type Fields = Record<string, unknown>;

function fail(op: string, code: 'bad_request' | 'too_large', message: string): never {
  throw new SkiffError(code, message, op);
}

function wrong(op: string, label: string, rule: string): never {
  fail(op, 'bad_request', `field '${label}' ${rule}`);
}

const tableNameRule = /^[A-Za-z0-9_-]+$/;

/** undefined when `table` is a valid table name, else the server's reason. */
export function tableNameProblem(table: string): string | undefined {
  if (table.length === 0) return 'table name is empty';
  // The server counts bytes, and checks the length before the characters.
  if (table.length > MAX_TABLE_NAME_BYTES / 4 && utf8Length(table) > MAX_TABLE_NAME_BYTES) {
    return 'table name is longer than 64 bytes';
  }
  if (!tableNameRule.test(table)) {
    return "table name may only contain A-Z, a-z, 0-9, '_' and '-'";
  }
  return undefined;
}

/** undefined when `key` is a valid key, else the server's code and reason. */
export function keyProblem(key: string): { code: 'bad_request' | 'too_large'; message: string } | undefined {
  if (key.length === 0) return { code: 'bad_request', message: 'key is empty' };
  if (key.length > MAX_KEY_BYTES / 3) {
    const bytes = utf8Length(key);
    if (bytes > MAX_KEY_BYTES) {
      return { code: 'too_large', message: `key is ${bytes} bytes; the limit is ${MAX_KEY_BYTES}` };
    }
  }
  if (hasLoneSurrogate(key)) return { code: 'bad_request', message: 'key is not valid UTF-8' };
  if (key.includes('\0')) return { code: 'bad_request', message: 'key contains U+0000' };
  return undefined;
}

function isUnsigned(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
}

function checkString(op: string, label: string, v: unknown): string {
  if (typeof v !== 'string') wrong(op, label, 'must be a string');
  return v;
}

function checkKey(op: string, label: string, key: string): void {
  const problem = keyProblem(key);
  if (problem !== undefined) fail(op, problem.code, `field '${label}': ${problem.message}`);
}

function checkField(op: string, f: FieldSpec, label: string, v: unknown): void {
  switch (f.type) {
    case 'string':
      checkString(op, label, v);
      return;
    case 'table_name': {
      const problem = tableNameProblem(checkString(op, label, v));
      if (problem !== undefined) fail(op, 'bad_request', `field '${label}': ${problem}`);
      return;
    }
    case 'key':
      checkKey(op, label, checkString(op, label, v));
      return;
    case 'json':
      return; // any JSON: checkJson walks it with the rest of the request
    case 'number':
      if (typeof v !== 'number') wrong(op, label, 'must be a number');
      return;
    case 'unsigned':
      if (!isUnsigned(v)) wrong(op, label, 'must be an unsigned integer');
      return;
    case 'bool':
      if (typeof v !== 'boolean') wrong(op, label, 'must be true or false');
      return;
    case 'path':
      if (!Array.isArray(v) || !v.every((part) => typeof part === 'string')) {
        wrong(op, label, 'must be an array of strings');
      }
      return;
    case 'scan_limit':
      if (!Number.isInteger(v) || (v as number) < 1 || (v as number) > MAX_SCAN_LIMIT) {
        wrong(op, label, `must be an integer from 1 to ${MAX_SCAN_LIMIT}`);
      }
      return;
    case 'near_limit':
      if (!Number.isInteger(v) || (v as number) < 1 || (v as number) > MAX_NEAR_LIMIT) {
        wrong(op, label, `must be an integer from 1 to ${MAX_NEAR_LIMIT}`);
      }
      return;
    case 'sync_limit':
      if (!isUnsigned(v)) wrong(op, label, 'must be an unsigned integer');
      if (v === 0) wrong(op, label, 'must be at least 1');
      return;
    case 'scan_after': {
      const after = v;
      if (typeof after !== 'string') wrong(op, label, 'must be a string or null');
      if (after.length > 0) checkKey(op, label, after);
      return;
    }
    case 'sync_after': {
      const rule = 'must be null or [group, table, key] (three strings)';
      if (!Array.isArray(v) || v.length !== 3 || !v.every((p) => typeof p === 'string')) {
        wrong(op, label, rule);
      }
      if (v[0] === '') wrong(op, label, 'must name a group');
      return;
    }
    case 'box':
      if (!Array.isArray(v) || v.length !== 2 || typeof v[0] !== 'number' || typeof v[1] !== 'number') {
        wrong(op, label, 'must be [width, height], two numbers of metres');
      }
      return;
    case 'changes':
      if (!Array.isArray(v)) wrong(op, label, 'must be an array');
      v.forEach((change, i) => {
        const at = `changes[${i}]`;
        if (typeof change !== 'object' || change === null || Array.isArray(change)) {
          wrong(op, at, 'must be an object');
        }
        checkFields(op, PUSH_CHANGE_FIELDS, change as Fields, `${at}.`);
      });
      return;
  }
}

// The server takes a field given as null as absent when it is optional
// (but path, whose null is a wrong type) and when it is a required unsigned
// integer (which is then missing).
function nullIsAbsent(f: FieldSpec): boolean {
  if (!f.required) return f.type !== 'path';
  return f.type === 'unsigned';
}

function checkFields(op: string, fields: readonly FieldSpec[], obj: Fields, prefix: string): void {
  for (const f of fields) {
    const label = prefix + f.name;
    const v = obj[f.name];
    if (v === undefined || (v === null && nullIsAbsent(f))) {
      if (f.required) fail(op, 'bad_request', `missing field '${label}'`);
      continue;
    }
    checkField(op, f, label, v);
  }
}

// A lone surrogate cannot be written as UTF-8: JSON.stringify sends it as a
// \ud800 escape, which the server's parser refuses before it reads the id
// (so the reply could not be matched to the call). With the u flag the
// class matches only surrogates that are not half of a pair.
const loneSurrogate = /\p{Cs}/u;

function surrogateProblem(text: string): string | undefined {
  const m = loneSurrogate.exec(text);
  if (m === null) return undefined;
  const unit = m[0].charCodeAt(0);
  return unit < 0xdc00
    ? 'surrogate U+D800..U+DBFF must be followed by U+DC00..U+DFFF'
    : 'surrogate U+DC00..U+DFFF must follow U+D800..U+DBFF';
}

function isPlainObject(v: object): boolean {
  const proto = Object.getPrototypeOf(v) as unknown;
  return proto === Object.prototype || proto === null;
}

function kindOf(v: object): string {
  const name = (v as { constructor?: { name?: unknown } }).constructor?.name;
  return typeof name === 'string' && name !== '' ? `a ${name}` : 'an object with a prototype';
}

/**
 * Walks every value of a request (level 1 is the request object): what
 * JSON cannot carry faithfully is refused (bad_request) rather than sent
 * changed (NaN and Infinity would become null, a Map or Set {}), nesting
 * past `maxDepth` is too_large, as the server says, and the first lone
 * surrogate (in a string or a member name) is kept in `found` for the
 * caller: the server's parser only meets it after its depth scan.
 */
function checkJson(op: string, v: unknown, level: number, maxDepth: number, found: { surrogate?: string }): void {
  switch (typeof v) {
    case 'string':
      if (found.surrogate === undefined) found.surrogate = surrogateProblem(v);
      return;
    case 'boolean':
      return;
    case 'number':
      if (!Number.isFinite(v)) fail(op, 'bad_request', `${v} is not a JSON number`);
      return;
    case 'object': {
      if (v === null) return;
      if (level > maxDepth) {
        fail(op, 'too_large', `document nests deeper than ${maxDepth} levels`);
      }
      if (Array.isArray(v)) {
        for (const item of v) checkJson(op, item, level + 1, maxDepth, found);
        return;
      }
      if (!isPlainObject(v)) {
        fail(op, 'bad_request', `${kindOf(v)} is not JSON: pass a plain object or an array`);
      }
      for (const key in v) {
        if (Object.prototype.hasOwnProperty.call(v, key)) {
          const item = (v as Fields)[key];
          // JSON.stringify drops undefined members, as the caller meant.
          if (item === undefined) continue;
          if (found.surrogate === undefined) found.surrogate = surrogateProblem(key);
          checkJson(op, item, level + 1, maxDepth, found);
        }
      }
      return;
    }
    default:
      fail(op, 'bad_request', `a ${typeof v} is not JSON`);
  }
}

/**
 * Throws a SkiffError (bad_request, too_large) for a request the server
 * would refuse. `body`, the request already written as JSON (encodeBody),
 * spares the search for lone surrogates when it holds none: JSON.stringify
 * writes each as a lowercase \ud800..\udfff escape, and a body without
 * "\ud" has none.
 */
export function validateRequest(spec: OpSpec, fields: Fields, maxDepth: number, body?: string): void {
  const op = spec.name;
  if (!isPlainObject(fields)) fail(op, 'bad_request', 'fields must be a plain object');
  if ('id' in fields || 'op' in fields) {
    fail(op, 'bad_request', "fields may not set 'id' or 'op': the client does");
  }
  // The server parses the whole frame before it reads a field: its depth
  // limit first, then the text (where a lone surrogate fails).
  // '' marks the search as not needed: a found problem is never empty.
  const found: { surrogate?: string } = body === undefined || body.includes('\\ud') ? {} : { surrogate: '' };
  for (const key in fields) {
    const v = fields[key];
    if (v === undefined) continue;
    if (found.surrogate === undefined) found.surrogate = surrogateProblem(key);
    checkJson(op, v, 2, maxDepth, found);
  }
  if (found.surrogate !== undefined && found.surrogate !== '') {
    fail(op, 'bad_request', `malformed JSON: invalid string: ${found.surrogate}`);
  }
  checkFields(op, spec.fields, fields, '');
  const path = fields['path'];
  if (op === 'add' && Array.isArray(path) && path.length >= maxDepth) {
    fail(
      op,
      'too_large',
      `field 'path' has ${path.length} elements; documents nest at most ${maxDepth - 1} levels`,
    );
  }
}
