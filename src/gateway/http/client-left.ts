/**
 * The reason a handler's work is aborted when its client disconnects before the answer is sent
 * (routes/register.ts). Nothing can be answered then: the request is logged and counted with
 * nginx's 499 "client closed request", not as a 500.
 */
export class ClientLeftError extends Error {
  constructor() {
    super('the client disconnected before its answer');
  }
}

export const clientClosedRequest = 499;
