// The browser entry: the client over the environment's standard WebSocket.
// Node and Bun import 'skiff-client/node' (node.ts), which brings `ws`.

export { Client } from './client.js';
export type { ClientOptions, ClientState, Item, NearQuery, Page, Reply } from './client.js';
export {
  CLIENT_ERROR_CODES,
  SERVER_ERROR_CODES,
  SkiffError,
  isServerErrorCode,
} from './errors.js';
export type { ClientErrorCode, ErrorCode, ServerErrorCode } from './errors.js';
export { OPS, OPS_WITHOUT_LOGIN, PUSH_CHANGE_FIELDS, findOp } from './ops.js';
export type { FieldSpec, FieldType, OpSpec } from './ops.js';
export { DEFAULT_LIMITS, MAX_KEY_BYTES, MAX_TABLE_NAME_BYTES } from './limits.js';
export type { Limits } from './limits.js';
export type { ReconnectPolicy } from './backoff.js';
export type { WebSocketConstructorLike, WebSocketLike } from './transport.js';

// The device (a synced local copy of a user's rows) and the sync ops' typed
// forms, built on the client above.
export * from './device/index.js';
export * from './sync.js';
