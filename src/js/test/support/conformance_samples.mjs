// Sample field values by the protocol table's field types
// (src/protocol/requests.json): a valid one of each type, and wrong ones the
// server's decoder refuses with bad_request naming the field. The
// conformance tests build requests from these for every op.

const good = {
  string: 'd1',
  table_name: 'things',
  key: 'k1',
  json: { a: [1, null] },
  number: 1.5,
  unsigned: 0,
  bool: true,
  path: ['a', 'b'],
  scan_limit: 10,
  near_limit: 10,
  sync_limit: 10,
  scan_after: 'k0',
  sync_after: ['g', 't', 'k'],
  box: [100, 200],
  changes: [{ seq: 1, table: 't', key: 'k', group: 'g', value: 1 }],
};

const wrong = {
  string: [7, true, ['s']],
  table_name: [7, 'a b', ''],
  key: [7, ''],
  json: [],
  number: ['1', true],
  unsigned: [-1, 1.5, '1'],
  bool: [1, 'true'],
  path: ['a', [1], null],
  scan_limit: [0, 10001, 2.5, '1'],
  near_limit: [0, 10001, '1'],
  sync_limit: [0, '1'],
  scan_after: [3, ['k']],
  sync_after: [['g', 't'], 'g', ['', 't', 'k']],
  box: [[1], 'x', [1, '2']],
  changes: [{}, [1], [{ seq: 1 }]],
};

/** A valid value of a field type. */
export function goodValue(type) {
  if (!(type in good)) throw new Error(`no sample of field type ${type}`);
  return structuredClone(good[type]);
}

/** Values of a field type the server refuses with bad_request. */
export function wrongValues(type) {
  if (!(type in wrong)) throw new Error(`no sample of field type ${type}`);
  return structuredClone(wrong[type]);
}

/** Fields of a valid request: every field, or only the required ones. */
export function goodFields(op, fields, all) {
  const out = {};
  for (const f of fields) {
    if (f.required || all) out[f.name] = goodValue(f.type);
  }
  return out;
}
