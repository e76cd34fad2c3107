// The TypeScript client against src/protocol/requests.json, the protocol
// table the server is held to (test/server/protocol_table_test.cc): the
// same ops and fields in the same order, the same error codes and limits,
// compared both ways. Then the client's checks are driven by the table
// itself: every field of every op, left out or given a wrong type, is
// refused the way the server's decoder refuses it.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

import { OPS, PUSH_CHANGE_FIELDS, findOp } from '../dist/ops.js';
import { SERVER_ERROR_CODES, CLIENT_ERROR_CODES, SkiffError } from '../dist/errors.js';
import { DEFAULT_LIMITS, MAX_KEY_BYTES, MAX_TABLE_NAME_BYTES, MAX_SCAN_LIMIT, MAX_NEAR_LIMIT } from '../dist/limits.js';
import { validateRequest } from '../dist/validate.js';
import { goodFields, wrongValues } from './support/conformance_samples.mjs';

const table = JSON.parse(readFileSync(new URL('../../protocol/requests.json', import.meta.url), 'utf8'));

const rows = (op, fields) => fields.map((f) => `${op} ${f.name} ${f.type} ${f.required ? 'required' : 'optional'}`);

test('the ops are the table ops, in its order', () => {
  assert.deepEqual(
    OPS.map((op) => op.name),
    table.ops.map((op) => op.name),
  );
});

test('every op has the table fields, both ways', () => {
  for (const op of table.ops) {
    const spec = findOp(op.name);
    assert.ok(spec, `the table has an op the client does not: ${op.name}`);
    assert.deepEqual(rows(op.name, spec.fields), rows(op.name, op.fields));
  }
  for (const spec of OPS) {
    assert.ok(
      table.ops.some((op) => op.name === spec.name),
      `the client has an op the table does not: ${spec.name}`,
    );
  }
});

test('push changes have the table fields', () => {
  assert.deepEqual(rows('change', PUSH_CHANGE_FIELDS), rows('change', table.push_change_fields));
});

test('the server error codes are the table ones, both ways, and no client code clashes', () => {
  assert.deepEqual([...SERVER_ERROR_CODES].sort(), [...table.error_codes].sort());
  for (const code of CLIENT_ERROR_CODES) {
    assert.ok(!table.error_codes.includes(code), code);
    assert.ok(!table.server_only_error_codes.includes(code), code);
  }
});

test('the limits are the table ones', () => {
  assert.equal(DEFAULT_LIMITS.maxFrameBytes, table.limits.max_frame_bytes);
  assert.equal(DEFAULT_LIMITS.maxDepth, table.limits.max_depth);
  assert.equal(MAX_KEY_BYTES, table.limits.max_key_bytes);
  assert.equal(MAX_TABLE_NAME_BYTES, table.limits.max_table_name_bytes);
  assert.equal(MAX_SCAN_LIMIT, table.limits.max_scan_limit);
  assert.equal(MAX_NEAR_LIMIT, table.limits.max_near_limit);
});

function refusal(op, fields) {
  try {
    validateRequest(findOp(op), fields, DEFAULT_LIMITS.maxDepth);
  } catch (e) {
    assert.ok(e instanceof SkiffError);
    return e;
  }
  return undefined;
}

test('every op passes with all its fields, and with only its required ones', () => {
  for (const op of table.ops) {
    assert.equal(refusal(op.name, goodFields(op.name, op.fields, true)), undefined, op.name);
    assert.equal(refusal(op.name, goodFields(op.name, op.fields, false)), undefined, op.name);
  }
});

test('every required field left out is missing, by name', () => {
  for (const op of table.ops) {
    for (const f of op.fields.filter((field) => field.required)) {
      const fields = goodFields(op.name, op.fields, true);
      delete fields[f.name];
      const e = refusal(op.name, fields);
      assert.equal(e?.code, 'bad_request', `${op.name} without ${f.name}`);
      assert.equal(e.message, `${op.name}: bad_request: missing field '${f.name}'`);
    }
  }
});

test('every field of a wrong type is refused naming the field', () => {
  let cases = 0;
  for (const op of table.ops) {
    for (const f of op.fields) {
      for (const wrong of wrongValues(f.type)) {
        const fields = { ...goodFields(op.name, op.fields, true), [f.name]: wrong };
        const e = refusal(op.name, fields);
        assert.equal(e?.code, 'bad_request', `${op.name}.${f.name} = ${JSON.stringify(wrong)}`);
        assert.match(e.message, new RegExp(`field '${f.name.replace(/[[\]]/g, '\\$&')}`));
        ++cases;
      }
    }
  }
  assert.ok(cases > 60, `only ${cases} cases`);
});
