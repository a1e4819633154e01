import dgram from 'node:dgram';
import type { AddressInfo } from 'node:net';

// A DNS server for tests (UDP on 127.0.0.1, any free port): A records with a TTL for the names it
// is given, an empty answer (NODATA) for their other types, NXDOMAIN for other names, and no answer
// at all for names marked slow (a resolver that hangs) until release(). Counts the queries.

export type DnsStub = {
  server: string;
  /** Queries received for the name and type ('A' or 'AAAA'). */
  queries(name: string, type?: 'A' | 'AAAA'): number;
  /** Answers the held queries of slow names from now on (with NXDOMAIN). */
  release(): void;
  close(): Promise<void>;
};

const types: Record<number, 'A' | 'AAAA'> = { 1: 'A', 28: 'AAAA' };

export async function startDnsStub(records: {
  a?: Record<string, { address: string; ttl: number }>;
  slow?: string[];
}): Promise<DnsStub> {
  const socket = dgram.createSocket('udp4');
  const counts = new Map<string, number>();
  const held: (() => void)[] = [];
  let releasing = false;
  socket.on('message', (msg, peer) => {
    // The first question: labels up to a zero byte, then its type and class.
    const labels: string[] = [];
    let at = 12;
    while (msg[at]! > 0) {
      labels.push(msg.subarray(at + 1, at + 1 + msg[at]!).toString('ascii'));
      at += msg[at]! + 1;
    }
    const name = labels.join('.').toLowerCase();
    const type = types[msg.readUInt16BE(at + 1)];
    const question = msg.subarray(12, at + 5);
    const key = `${name} ${type}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
    const record = records.a?.[name];
    const answers: Buffer[] = [];
    if (record && type === 'A') {
      const rr = Buffer.alloc(16);
      rr.writeUInt16BE(0xc00c, 0); // the name: a pointer to the question's
      rr.writeUInt16BE(1, 2); // A
      rr.writeUInt16BE(1, 4); // IN
      rr.writeUInt32BE(record.ttl, 6);
      rr.writeUInt16BE(4, 10);
      record.address.split('.').forEach((octet, i) => rr.writeUInt8(Number(octet), 12 + i));
      answers.push(rr);
    }
    const header = Buffer.alloc(12);
    msg.copy(header, 0, 0, 2); // the query's id
    header.writeUInt16BE(record ? 0x8180 : 0x8183, 2); // a response, recursion available; NXDOMAIN for unknown names
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(answers.length, 6);
    const send = () => socket.send(Buffer.concat([header, question, ...answers]), peer.port, peer.address);
    if (records.slow?.includes(name) && !releasing) held.push(send);
    else send();
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return {
    server: `127.0.0.1:${(socket.address() as AddressInfo).port}`,
    queries: (name, type = 'A') => counts.get(`${name} ${type}`) ?? 0,
    release() {
      releasing = true;
      for (const send of held.splice(0)) send();
    },
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}
