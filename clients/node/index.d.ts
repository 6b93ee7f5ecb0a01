// Types of redelay's Node.js producer (index.js).

import type { Cluster, Redis } from 'ioredis';

/** The offer protocol this package speaks (docs/protocol.md). */
export declare const PROTOCOL_VERSION: 1;

/** Base class of every error this package throws. */
export declare class RedelayError extends Error {}

/** An argument cannot be offered; nothing was sent to Redis. */
export declare class InvalidArgumentError extends RedelayError {}

/** An item with this ID is already pending: it was kept, the new one dropped. */
export declare class DuplicateError extends RedelayError {
  readonly id: string;
}

/** The queue is at its bound (maxSize): nothing was stored. */
export declare class QueueFullError extends RedelayError {}

/** The offer was sent but no reply came, even after resending: it may or may not be stored. */
export declare class OfferOutcomeUnknownError extends RedelayError {
  readonly ids: string[];
}

export interface ProducerOptions {
  /** The key prefix (the consumers' blocking.WithPrefix). Default "redelay". */
  prefix?: string;
  /** The consumers' codec: "json" (default) or "raw" (Buffer values). */
  codec?: 'json' | 'raw';
  /** The queue's bound (the consumers' blocking.WithMaxSize). Default 0: none. */
  maxSize?: number;
  /** Bound of an encoded value plus its headers, bytes. Default 1 MiB; 0: none. */
  maxPayload?: number;
  /** How many times a call without a reply is resent. Default 3. */
  resends?: number;
}

export interface OfferOptions {
  /** Delay in milliseconds. Default 0: ready now unless earlier items are due. */
  delay?: number;
  /** The item's ID (1 to 256 bytes of UTF-8). Default: a new random one. */
  id?: string;
  /** Headers the consumer sees in Delivery.Headers. */
  headers?: Record<string, string>;
  /** 0 (default) to 9: higher is taken first among ready items. */
  priority?: number;
  /** The item's group (fair share per key). */
  group?: string;
  /**
   * Time to live after the due time, in ms (1 ms to 10 years; default
   * none): an item undelivered by then goes to the dead letters as expired.
   */
  ttl?: number;
}

export type OfferAtOptions = Omit<OfferOptions, 'delay'>;

export interface BatchOptions {
  delay?: number;
  headers?: Record<string, string>;
  priority?: number;
  ttl?: number;
}

export interface Item<T = unknown> extends OfferOptions {
  value: T;
  /** Due time; exclusive with delay. */
  at?: Date;
}

/** Offers items to a redelay queue, for its Go consumers. */
export declare class Producer<T = unknown> {
  constructor(redis: Redis | Cluster, queue: string, options?: ProducerOptions);
  readonly queue: string;
  /** Offers value and resolves to its ID. */
  offer(value: T, options?: OfferOptions): Promise<string>;
  /** Offers value due at `at` and resolves to its ID. */
  offerAt(value: T, at: Date, options?: OfferAtOptions): Promise<string>;
  /** Offers every value alike and resolves to their new IDs, in order. */
  offerBatch(values: Iterable<T>, options?: BatchOptions): Promise<string[]>;
  /** Offers each item and resolves to their IDs, in order. */
  offerMany(items: Item<T>[]): Promise<string[]>;
  /** Cancels a pending item: true when it was pending and is now removed. */
  remove(id: string): Promise<boolean>;
}

/** A random 16-character ID, the shape of the Go library's. */
export declare function newId(): string;
/** The partition of id in a queue of n partitions. */
export declare function partitionOf(id: string, n: number): number;
/** Whether id has the shape of a recurring schedule's tick ID. */
export declare function isTickId(id: string): boolean;
/** The envelope of one item (docs/format.md). */
export declare function envelope(id: string, payload: Buffer, headers?: Record<string, string>, priority?: number, group?: string, ttlMs?: number): Buffer;
