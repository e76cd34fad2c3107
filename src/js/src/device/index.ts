// The device: a synced local copy of a user's rows (device.ts), on memory
// or IndexedDB storage.

export { Device } from './device.js';
export type { DeviceCounters, DeviceOptions } from './device.js';
export { MemoryStorage } from './memory_storage.js';
export { IndexedDbStorage, StorageError } from './indexeddb_storage.js';
export type { IndexedDbStorageOptions } from './indexeddb_storage.js';
export type { DeviceStorage, OutboxEntry, StorageCommit, StorageCounters, StoredState, SyncPosition } from './storage.js';
export type { RemoteListener, RowText } from './replica.js';
export type { SyncState } from './sync_loop.js';
export { ValueError } from './member_names.js';
export * as sync from '../sync.js';
