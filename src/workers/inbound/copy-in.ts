import type { Connection, PoolClient, Submittable } from 'pg';

/**
 * `COPY … FROM STDIN` of one buffer on a pooled client, in one round trip; resolves with the rows
 * PostgreSQL read. pg-copy-streams, used before, waits for the server's CopyInResponse before it
 * sends a byte, a round trip of its own per chunk. Here the statement, the data and CopyDone go
 * out together, which the protocol allows: when the server refuses the statement or fails during
 * the copy, "any subsequent CopyData, CopyDone, or CopyFail messages issued by the frontend will
 * simply be dropped" (PostgreSQL, protocol flow, COPY operations). `sql` may begin with other
 * statements (`SAVEPOINT x; COPY …`): one simple Query message, so they cost no round trip either.
 */
export function copyIn(client: PoolClient, sql: string, data: Buffer): Promise<number> {
  return new Promise((resolve, reject) => {
    client.query(new CopyIn(sql, data, (err, rows) => (err ? reject(err) : resolve(rows))));
  });
}

// Protocol message types (frontend): CopyData 'd', CopyDone 'c', each followed by its length.
const copyData = 0x64;
const copyDone = Buffer.from([0x63, 0, 0, 0, 4]);

/** A query object of node-postgres (the interface pg-copy-streams and pg-cursor implement). */
class CopyIn implements Submittable {
  private rows = 0;

  constructor(
    private readonly text: string,
    private readonly data: Buffer,
    private readonly done: (err: Error | null, rows: number) => void,
  ) {}

  submit(connection: Connection): void {
    connection.query(this.text);
    const header = Buffer.alloc(5);
    header[0] = copyData;
    header.writeUInt32BE(this.data.length + 4, 1);
    connection.stream.write(header);
    connection.stream.write(this.data);
    connection.stream.write(copyDone);
  }

  /** The data is on its way already. */
  handleCopyInResponse(): void {}

  handleCommandComplete(msg: { text?: string }): void {
    const copied = /^COPY (\d+)$/.exec(msg.text ?? '');
    if (copied) this.rows = Number(copied[1]);
  }

  /** node-postgres forgets the query here (no ReadyForQuery callback follows). */
  handleError(err: Error): void {
    this.done(err, 0);
  }

  handleReadyForQuery(): void {
    this.done(null, this.rows);
  }
}
