import { logLevel, type logCreator } from 'kafkajs';
import type { Logger } from '../logger.js';

/** Routes kafkajs's own log lines into our pino logger instead of the console. */
export const kafkajsLogCreator =
  (logger: Logger): logCreator =>
  () =>
  ({ level, log }) => {
    const { message, ...extra } = log;
    const child = { ...extra, kafkajs: true };
    if (level === logLevel.ERROR) logger.error(child, message);
    else if (level === logLevel.WARN) logger.warn(child, message);
    else if (level === logLevel.INFO) logger.debug(child, message);
    else logger.trace(child, message);
  };
