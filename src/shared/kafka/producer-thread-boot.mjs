// Loads the TypeScript thread under tsx when the service runs from sources (tests, `npm run
// gateway`); the compiled service (dist) loads producer-thread-worker.js directly.
const tsx = await import('tsx/esm/api');
tsx.register();
await import('./producer-thread-worker.ts');
