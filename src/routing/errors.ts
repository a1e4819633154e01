/** The input cannot be routed as given (bad time, vehicle count, ...); the message names the field. */
export class RouteInputError extends Error {
  override readonly name = 'RouteInputError';
}
