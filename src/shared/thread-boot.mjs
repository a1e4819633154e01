// A thread's entry when the service runs from its TypeScript sources (tests, `npm run gateway`):
// registers tsx, then loads the task module threads.ts names. The compiled service (dist) loads
// the task's .js directly.
import { Piscina } from 'piscina';

const tsx = await import('tsx/esm/api');
tsx.register();
const task = await import(Piscina.workerData.module);
export default task.default;
