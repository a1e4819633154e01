// The Node options every gateway process starts with: the Dockerfile, docker-compose.yml,
// deploy/k8s/gateway.yaml, scripts/stack, `npm run gateway`, and the tests and benchmarks that
// spawn one (test/unit/gateway-node-flags.test.ts keeps the files in step with this list).
//
// --single-threaded-gc: each isolate collects its own garbage on its own thread. The gateway's
// three busy isolates (event loop, batch-parse, kafka-producer) allocate fast, the producer's
// mostly Buffers (kafkajs), which start a full collection every few megabytes; with V8's helper
// threads marking and sweeping beside them, a 2-core machine spent 4 ms of CPU per 1,000 targets
// on those helpers. Without them the gateway took 14.2 against 15.5 ms per 1,000 targets, served
// 8% more (bench:inbound), and the noisy-neighbour figures stayed the same or better.
export const gatewayNodeFlags: readonly string[] = ['--single-threaded-gc'];
