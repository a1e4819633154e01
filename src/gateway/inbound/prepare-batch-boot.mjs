// Loads the TypeScript task under tsx when the gateway runs from sources (tests, `npm run
// gateway`); the compiled gateway (dist) loads prepare-batch-task.js directly.
const tsx = await import('tsx/esm/api');
tsx.register();
const task = await import('./prepare-batch-task.ts');
export default task.default;
