// The Node options every gateway process starts with: the Dockerfile, docker-compose.yml,
// deploy/k8s/gateway.yaml, scripts/stack, `npm run gateway`, and the tests and benchmarks that
// spawn one (test/unit/gateway-node-flags.test.ts keeps the files in step with this list).
// Figures: bench:inbound on 2 cores, 1,000-target batches.
//
// --single-threaded-gc: each isolate collects its own garbage on its own thread. With V8's
//   helper threads marking and sweeping beside the gateway's three busy isolates (event loop,
//   batch-parse, kafka-producer), those helpers took 4 ms of CPU per 1,000 targets; without them
//   the gateway took 14.2 against 15.5 ms and served 8% more, and bench:noisy stayed the same or
//   better.
// --initial-old-space-size=128: every request passes about a megabyte of Buffers (body, chunks)
//   through the event loop, and that memory counts towards the heap's limit: at V8's default the
//   loop ran a full collection of its ~30 MB heap every ~17 requests (19 in a run, ~35 ms of
//   marking each). A larger first limit: 7 in a run, the event loop's CPU 4.0 -> 2.8 ms per 1,000
//   targets, peak memory +20-40 MiB (467 MiB under bench:noisy's 16 MiB batches).
// --max-old-space-size=192: the event loop's heap is part of the memory budget
//   (src/gateway/memory/memory-budget.ts): its limit is stated, not left to V8's guess from the
//   machine's memory (4 GiB on a large host); under the worst load its heap was 80 MiB.
export const gatewayNodeFlags: readonly string[] = [
  '--single-threaded-gc',
  '--initial-old-space-size=128',
  '--max-old-space-size=192',
];
