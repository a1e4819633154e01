import net from 'node:net';

/**
 * A TCP proxy in front of a broker that can lose the answer to one produce request: the request
 * reaches the broker (which writes the batch), the broker's response is withheld and the client's
 * connection closed, as when a broker or the network dies between the append and the reply.
 * The broker must advertise the proxy's address (advertised.listeners), so that every connection
 * of the client goes through it.
 */
export async function startResponseDroppingProxy() {
  let targetPort = 0;
  let armed = false;
  let dropped = 0;
  const sockets = new Set<net.Socket>();

  const server = net.createServer((client) => {
    const upstream = net.connect(targetPort, '127.0.0.1');
    sockets.add(client).add(upstream);
    const close = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', close).on('close', close);
    upstream.on('error', close).on('close', close);
    const withheld = new Set<number>(); // correlation ids whose responses must not arrive

    // Requests: int32 size, int16 api key, int16 version, int32 correlation id, ...
    frames(client, (frame) => {
      if (armed && frame.readInt16BE(4) === 0 /* Produce */) {
        armed = false;
        withheld.add(frame.readInt32BE(8));
      }
      upstream.write(frame);
    });
    // Responses: int32 size, int32 correlation id, ...
    frames(upstream, (frame) => {
      if (withheld.has(frame.readInt32BE(4))) {
        dropped++;
        close();
        return;
      }
      client.write(frame);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;

  return {
    port,
    /** Where the broker listens (known once it is started). */
    forwardTo(brokerPort: number) {
      targetPort = brokerPort;
    },
    /** The next produce request's response is lost and its connection closed. */
    dropNextProduceResponse() {
      armed = true;
    },
    /** Responses lost so far. */
    dropped: () => dropped,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

/** Calls onFrame with each whole length-prefixed Kafka frame (prefix included) read from socket. */
function frames(socket: net.Socket, onFrame: (frame: Buffer) => void) {
  let pending: Buffer = Buffer.alloc(0);
  socket.on('data', (chunk: Buffer) => {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
    while (pending.length >= 4) {
      const size = 4 + pending.readInt32BE(0);
      if (pending.length < size) break;
      onFrame(pending.subarray(0, size));
      pending = pending.subarray(size);
    }
  });
}

export type ResponseDroppingProxy = Awaited<ReturnType<typeof startResponseDroppingProxy>>;
