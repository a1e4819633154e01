// Runs in every test file (vitest setupFiles): whatever service process a file spawned through
// test/support/processes.ts and did not stop (a failed assertion before its kill) is killed when
// the file ends, instead of running on beside the rest of the suite.
import { afterAll } from 'vitest';
import { killLeftProcesses } from '../support/processes.js';

afterAll(killLeftProcesses);
