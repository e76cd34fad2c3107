// Makes fresh keys and signed tokens for the token sign-in tests with
// Node's own crypto, an implementation independent of the server's.
// Usage: node make_tokens.mjs OUT_DIR
// Writes into OUT_DIR: hs256.key, rsa_public.pem, ec_public.pem,
// other_rsa_public.pem, jwks.json (an RSA and a P-256 key, kids "rsa-1" and
// "ec-1"), bad.jwks.json and tokens.json ({"now": unix seconds, "tokens":
// {name: token}}). Private keys live only in this process.
import { createHmac, createPrivateKey, generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const out = process.argv[2];
if (!out) {
  console.error('usage: node make_tokens.mjs OUT_DIR');
  process.exit(64);
}
mkdirSync(out, { recursive: true });

const now = Math.floor(Date.now() / 1000);
const b64 = (bytes) => Buffer.from(bytes).toString('base64url');
const json = (value) => b64(JSON.stringify(value));

const hmacKey = randomBytes(32).toString('hex'); // 64 bytes of text
const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const otherRsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
const otherEc = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const rsaPem = rsa.publicKey.export({ type: 'spki', format: 'pem' });

writeFileSync(join(out, 'hs256.key'), hmacKey);
writeFileSync(join(out, 'rsa_public.pem'), rsaPem);
writeFileSync(join(out, 'ec_public.pem'), ec.publicKey.export({ type: 'spki', format: 'pem' }));
writeFileSync(join(out, 'other_rsa_public.pem'),
              otherRsa.publicKey.export({ type: 'spki', format: 'pem' }));
const jwk = (key, kid, alg) => ({ ...key.export({ format: 'jwk' }), kid, alg, use: 'sig' });
writeFileSync(join(out, 'jwks.json'), JSON.stringify({
  keys: [jwk(rsa.publicKey, 'rsa-1', 'RS256'), jwk(ec.publicKey, 'ec-1', 'ES256')],
}));
// A JWKS whose key names an algorithm its type does not allow.
writeFileSync(join(out, 'bad.jwks.json'), JSON.stringify({
  keys: [jwk(rsa.publicKey, 'rsa-1', 'ES256')],
}));

const audience = 'skiff-test';
const issuer = 'https://issuer.test';
const grant = { read: ['t1', 't2'], write: ['t2'], groups: ['team'] };
const claims = (extra = {}) => ({
  sub: 'alice', aud: audience, iss: issuer, iat: now, exp: now + 3600, skiff: grant, ...extra,
});

// Signs `payloadText` (already JSON text, so malformed JSON can be signed).
function signText(alg, header, payloadText, key) {
  const input = `${json({ alg, typ: 'JWT', ...header })}.${b64(payloadText)}`;
  let signature;
  if (alg === 'HS256') {
    signature = createHmac('sha256', key).update(input).digest();
  } else if (alg === 'RS256') {
    signature = sign('sha256', Buffer.from(input), key);
  } else if (alg === 'ES256') {
    signature = sign('sha256', Buffer.from(input), { key, dsaEncoding: 'ieee-p1363' });
  } else {
    signature = Buffer.alloc(0);
  }
  return `${input}.${b64(signature)}`;
}
const token = (alg, key, extra = {}, header = {}) =>
  signText(alg, header, JSON.stringify(claims(extra)), key);

const hs = (extra, header) => token('HS256', hmacKey, extra, header);
const tokens = {
  hs256_ok: hs(),
  rs256_ok: token('RS256', rsa.privateKey),
  es256_ok: token('ES256', ec.privateKey),
  jwks_rsa_ok: token('RS256', rsa.privateKey, {}, { kid: 'rsa-1' }),
  jwks_ec_ok: token('ES256', ec.privateKey, {}, { kid: 'ec-1' }),
  jwks_unknown_kid: token('RS256', rsa.privateKey, {}, { kid: 'rsa-9' }),
  jwks_no_kid: token('RS256', rsa.privateKey),
  // ec-1's kid on an RSA signature: the kid's key allows only ES256.
  jwks_kid_wrong_type: token('RS256', rsa.privateKey, {}, { kid: 'ec-1' }),
  expired: hs({ iat: now - 7200, exp: now - 3600 }),
  not_yet_valid: hs({ nbf: now + 3600 }),
  issued_in_future: hs({ iat: now + 3600 }),
  no_exp: hs({ exp: undefined }),
  exp_text: hs({ exp: String(now + 3600) }),
  wrong_audience: hs({ aud: 'someone-else' }),
  audience_list: hs({ aud: ['other', audience] }),
  wrong_issuer: hs({ iss: 'https://evil.test' }),
  bad_signature_hs256: token('HS256', 'a different key of at least thirty-two bytes'),
  bad_signature_rs256: token('RS256', otherRsa.privateKey),
  bad_signature_es256: token('ES256', otherEc.privateKey),
  alg_none: signText('none', {}, JSON.stringify(claims()), null),
  alg_none_upper: signText('NONE', {}, JSON.stringify(claims()), null),
  alg_hs512: `${json({ alg: 'HS512', typ: 'JWT' })}.${json(claims())}.${b64(randomBytes(64))}`,
  // Algorithm confusion: HS256 keyed with the public key's PEM text.
  confusion_hs256_with_pem: token('HS256', rsaPem),
  malformed_base64_padding: `${hs()}=`,
  malformed_base64_alphabet: hs().replace(/^(.)/, '+'),
  malformed_two_parts: hs().split('.').slice(0, 2).join('.'),
  malformed_four_parts: `${hs()}.${b64('x')}`,
  malformed_header_json: `${b64('{"alg":"HS256"')}.${json(claims())}.${b64('x')}`,
  malformed_payload_json: signText('HS256', {}, '{"sub":"alice",', hmacKey),
  payload_not_object: signText('HS256', {}, '[1,2,3]', hmacKey),
  oversized: hs({ filler: 'x'.repeat(9000) }),
  sub_dollar: hs({ sub: '$users' }),
  sub_missing: hs({ sub: undefined }),
  sub_invalid_name: hs({ sub: 'not a name!' }),
  no_claim: hs({ skiff: undefined }),
  claim_everything: hs({ skiff: { read: ['*'], write: ['*'] } }),
  claim_not_object: hs({ skiff: ['t1'] }),
  claim_bad_table: hs({ skiff: { read: ['bad table name'] } }),
  claim_star_group: hs({ skiff: { groups: ['*'] } }),
  other_claim: hs({ skiff: undefined, app: { read: ['t1'] } }),
  crit_header: hs({}, { crit: ['exp'] }),
  // Short-lived (integration: expiry during the session).
  short_lived: hs({ exp: now + 8 }),
  short_lived_es256: token('ES256', ec.privateKey, { exp: now + 8 }),
};
writeFileSync(join(out, 'tokens.json'), JSON.stringify({ now, audience, issuer, tokens }, null, 1));
