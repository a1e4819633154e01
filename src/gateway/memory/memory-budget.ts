import { AppError, busy } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import { InFlightSlots, type SlotHolder } from '../http/in-flight.js';

// The gateway's memory budget (issue 31; the arithmetic: docs/operations.md, "Memory"). What a
// request holds is counted before it is read, from what it declares: a body's bytes times what
// reading, parsing, validating, cutting and producing it cost at most (bodyCostFactor), a draft's
// distance matrix. Requests whose cost does not fit what the budget leaves after fixedBytes
// are refused unread (503 + Retry-After), and one client or tenant holds at most its share
// of it (429 memory_share_exceeded), so the others keep being served. Resident memory is read
// as a backstop: past highWater of the budget, bodies larger than a small one and drafts are
// refused while another is in flight, until it is back under lowWater (garbage not yet
// collected, a cost underestimated).

const MiB = 1024 * 1024;
/** Resident memory of the gateway at rest, its threads started (157 MiB measured: docs/operations.md). */
const idleBytes = 160 * MiB;
/** Garbage the event loop's heap may hold between collections (--initial-old-space-size=128, of 192). */
const eventLoopGarbageBytes = 64 * MiB;

/** What the gateway holds whatever its requests: at rest, plus the garbage its isolates may keep
 *  (each parse thread up to its heap limit, see batch-pool.ts). */
export const fixedBytes = (parseThreads: number, parseThreadHeapMb: number) =>
  idleBytes + eventLoopGarbageBytes + parseThreads * parseThreadHeapMb * MiB;
/** Bytes held per body byte in flight: the body, its copy in a parse thread, the rows, the Kafka
 *  messages and the producer thread's copy (the parse's objects are in the thread's heap, counted
 *  in fixedBytes); bench:noisy's worst phase checks the sum stays under the budget. */
export const bodyCostFactor = 5;
/** Every request, whatever its body: buffers, parser, context. */
const requestCostBytes = 16 * 1024;
/** Bodies up to this are let through the backstop (the cost of a small request is never the problem). */
const smallBodyBytes = 64 * 1024;
const highWater = 0.8;
const lowWater = 0.7;
const backstopIntervalMs = 200;

export type MemoryRelease = () => void;

export type MemoryBudget = {
  /** Budget in bytes; 0 when off. */
  readonly budgetBytes: number;
  /** Bytes requests may hold together: budget × highWater less fixedBytes. */
  readonly inFlightBytes: number;
  /** Reserves what a body of `bodyBytes` costs, or throws 503 / 429 (nothing read yet). */
  admitBody(holder: SlotHolder, bodyBytes: number): MemoryRelease;
  /** Reserves `bytes` of computation (a draft's matrix), or throws 503 / 429. */
  admitWork(holder: SlotHolder, bytes: number): MemoryRelease;
  /** Reserved bytes now, and whether the backstop refuses. */
  state(): { reservedBytes: number; pressure: boolean };
  stop(): void;
};

const nothing: MemoryRelease = () => undefined;

export const noMemoryBudget: MemoryBudget = {
  budgetBytes: 0,
  inFlightBytes: 0,
  admitBody: () => nothing,
  admitWork: () => nothing,
  state: () => ({ reservedBytes: 0, pressure: false }),
  stop: () => undefined,
};

export type MemoryBudgetSettings = {
  budgetBytes: number;
  /** See fixedBytes. */
  fixedBytes: number;
  clientSharePercent: number;
  tenantSharePercent: number;
  logger: Logger;
  /** Resident bytes now (tests give their own). */
  rss?: () => number;
};

const group = 'memory';

export function createMemoryBudget(s: MemoryBudgetSettings): MemoryBudget {
  const inFlightBytes = Math.max(0, Math.floor(s.budgetBytes * highWater) - s.fixedBytes);
  const shares = new InFlightSlots({
    client: { percent: s.clientSharePercent },
    tenant: { percent: s.tenantSharePercent },
  });
  const rss = s.rss ?? (() => process.memoryUsage.rss());
  let reservedBytes = 0;
  let pressure = false;
  const log = s.logger.child({ component: 'memory-budget' });
  const check = () => {
    const resident = rss();
    const was = pressure;
    if (resident > s.budgetBytes * highWater) pressure = true;
    else if (resident < s.budgetBytes * lowWater) pressure = false;
    if (pressure !== was) {
      // The event loop's heap and buffers beside: what the rest (threads, allocator) holds is the difference.
      const { heapTotal, external, arrayBuffers } = process.memoryUsage();
      const held = {
        residentBytes: resident,
        budgetBytes: s.budgetBytes,
        reservedBytes,
        heapTotal,
        external,
        arrayBuffers,
      };
      log.warn(
        held,
        pressure
          ? 'resident memory past 80% of the budget: one large body or draft at a time until it is under 70%'
          : 'resident memory under 70% of the budget again',
      );
    }
  };
  const timer = setInterval(check, backstopIntervalMs).unref();

  function admit(holder: SlotHolder, bytes: number, large: boolean): MemoryRelease {
    // Past the high water one large request at a time goes on: resident memory a freed body left
    // behind (an allocator that keeps it) may never fall under the low water, and refusing all would
    // then refuse them for good.
    if (large && pressure && reservedBytes > 0) throw busy("The gateway's memory is near its budget");
    const taken = shares.takeWeighted(group, holder, inFlightBytes, bytes);
    if (taken === 'group') throw busy("The gateway's memory budget for requests in flight is in use");
    if (typeof taken !== 'function') {
      throw new AppError(
        'memory_share_exceeded',
        `The ${taken === 'tenant' ? "client's tenant's" : "client's"} share of the gateway's memory for requests in flight is held by its other requests; nothing was read. Retry after 1 s.`,
        null,
        { share: taken, costBytes: bytes },
        1,
      );
    }
    reservedBytes += bytes;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      taken();
      reservedBytes -= bytes;
    };
  }

  return {
    budgetBytes: s.budgetBytes,
    inFlightBytes,
    admitBody: (holder, bodyBytes) =>
      admit(holder, requestCostBytes + bodyBytes * bodyCostFactor, bodyBytes > smallBodyBytes),
    admitWork: (holder, bytes) => admit(holder, bytes, true),
    state: () => ({ reservedBytes, pressure }),
    stop: () => clearInterval(timer),
  };
}
