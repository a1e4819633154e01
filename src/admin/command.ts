import type { Config } from '../shared/config.js';
import type { Pool } from '../shared/db/pool.js';
import type { MessageBus } from '../shared/kafka/bus.js';

export type Context = {
  pool: Pool;
  /** One line on stderr; stdout carries only the command's JSON result. */
  warn(message: string): void;
  /** Kafka (KAFKA_* settings), connected on first call; only commands that need it call it. */
  kafka?: () => { bus: MessageBus; kafka: Config['kafka'] };
};

/** One CLI command: parse runs before any database work, so usage errors never connect. */
export type Command<I = unknown> = {
  /** The words that select it, e.g. "key create". */
  name: string;
  /** Its options as shown in the usage text. */
  synopsis: string;
  summary: string;
  parse(args: string[]): I;
  run(ctx: Context, input: I): Promise<object>;
  /** Text to print instead of the JSON result (null: the JSON), for a command that reads as a report. */
  render?(result: object, input: I): string | null;
};
