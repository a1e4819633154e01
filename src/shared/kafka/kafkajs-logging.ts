import type { logCreator } from 'kafkajs';
import { logLevel } from './kafkajs.js';
import type { Logger } from '../logger.js';

/**
 * kafkajs ERROR lines that are not errors of ours: it logs every error response as it arrives
 * ("Response GroupCoordinator(…)": the coordinator still loading, a topic created twice, a leader
 * moving) and every failure it is about to retry (retryCount). Whoever called kafkajs sees the
 * outcome and logs it at its own level; a clean start or a broker failover logs no ERROR line.
 */
function expected(message: string, extra: Record<string, unknown>): boolean {
  return (
    message.startsWith('Response ') ||
    'retryCount' in extra ||
    message === 'The coordinator is not aware of this member, re-joining the group'
  );
}

/** Our level for a kafkajs log line (its INFO chatter is our debug). */
export function ourLevel(level: logLevel, message: string, extra: Record<string, unknown>) {
  if (level === logLevel.ERROR && !expected(message, extra)) return 'error';
  if (level === logLevel.ERROR || level === logLevel.WARN) return 'warn';
  return level === logLevel.INFO ? 'debug' : 'trace';
}

/** Routes kafkajs's own log lines into our pino logger instead of the console. */
export const kafkajsLogCreator =
  (logger: Logger): logCreator =>
  () =>
  ({ level, log }) => {
    const { message, ...extra } = log;
    logger[ourLevel(level, message, extra)]({ ...extra, kafkajs: true }, message);
  };
