/**
 * POSTs `body` in `pieces` pieces spread over `durationMs`, as a slow client would (fetch with a
 * streamed body, on a keep-alive connection). `sent()` counts the pieces handed over so far.
 */
export function trickledUpload(
  url: string,
  headers: Record<string, string>,
  body: Uint8Array,
  { durationMs, pieces }: { durationMs: number; pieces: number },
) {
  let sent = 0;
  const size = Math.ceil(body.length / pieces);
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (sent === pieces) return controller.close();
      controller.enqueue(body.subarray(sent * size, (sent + 1) * size));
      sent++;
      await new Promise((r) => setTimeout(r, durationMs / pieces));
    },
  });
  const answer = fetch(url, { method: 'POST', headers, body: stream, duplex: 'half' } as RequestInit).then(
    async (r) => ({ status: r.status, text: await r.text() }),
  );
  return { sent: () => sent, answer };
}
