import { pino, type Logger } from 'pino';
import { logContext } from './tracing/context.js';

export type { Logger };

// Credentials must never reach a log line, whatever object a caller passes.
const redactPaths = [
  'authorization',
  'apiKey',
  'token',
  'secret',
  '*.authorization',
  '*.apiKey',
  '*.token',
  '*.secret',
  'headers.authorization',
  'req.headers.authorization',
  'request.headers.authorization',
];

export function createLogger(level: string, name: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      name,
      level,
      base: { pid: process.pid, service: name },
      redact: { paths: redactPaths, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
      // The trace, span and correlation ids of the request or message being worked on.
      mixin: logContext,
    },
    destination,
  );
}
