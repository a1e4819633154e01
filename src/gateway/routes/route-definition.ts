import type { z } from 'zod';
import type { AppError } from '../../shared/errors.js';
import type { AuthenticatedClient } from '../auth/authenticate.js';

export type HttpMethod = 'get' | 'post' | 'patch' | 'delete';

/**
 * How a route is authenticated: an API key (spec part 5.1, /api routes), an OAuth2 access token
 * (spec part 5.4, /connect/v1 routes; see gateway/oauth) or none (ops endpoints, the token endpoint).
 */
export type RouteAuth = 'apiKey' | 'accessToken' | 'none';

export type HandlerInput<P, Q, B> = {
  params: P;
  query: Q;
  body: B;
  /** Present on authenticated routes. */
  client: AuthenticatedClient;
  requestId: string;
  correlationId: string;
  header(name: string): string;
  /** The TCP peer's address (ctx.ip; the app trusts no forwarded headers). */
  remoteAddress: string;
  /** Aborted when the client goes away before the answer is sent: stop long work then. */
  signal: AbortSignal;
};

export type ParseContext = {
  /** The body's bytes as sent (e.g. for a fingerprint). */
  bytes: Buffer;
};

export type HandlerResult = { status: number; body: unknown; headers?: Record<string, string> };

type ResponseDoc = {
  description: string;
  schema?: z.ZodType;
  /** Response headers this answer carries beyond the usual ones (documentation). */
  headers?: Record<string, z.ZodType>;
};

/**
 * One operation: its HTTP address, its schemas (used both to validate and to generate the
 * OpenAPI document) and its handler. Scope comes from auth/route-scopes.ts.
 */
export type RouteDefinition<
  P extends z.ZodType = z.ZodType,
  Q extends z.ZodType = z.ZodType,
  B extends z.ZodType = z.ZodType,
  BO = z.output<B>,
> = {
  method: HttpMethod;
  /** OpenAPI path template, e.g. /api/v1/import-jobs/{id}. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tag: string;
  auth: RouteAuth;
  params?: P;
  query?: Q;
  /** The documented body; validated with it unless parseBody is given. */
  body?: B;
  /** Validates the raw JSON body itself (e.g. item by item), instead of `body`. */
  parseBody?: (raw: unknown, context: ParseContext) => BO;
  /**
   * Parses the body's bytes itself (e.g. off the event loop), instead of `body`/`parseBody`;
   * the route still documents `body`.
   */
  parseRawBody?: (bytes: Buffer) => Promise<BO>;
  /**
   * Success responses by status. A documented error status listed here (e.g. the token endpoint's
   * RFC 6749 errors) replaces the standard error response of that status in the document.
   */
  responses: Record<number, ResponseDoc>;
  /** Error statuses this operation documents beyond those every authenticated route has. */
  errorStatuses?: readonly number[];
  /** Descriptions of this operation's error statuses, replacing the generic ones in the document. */
  errorDescriptions?: Readonly<Record<number, string>>;
  /** Statuses answered in the Connect error shape instead of the standard one. */
  connectErrorStatuses?: readonly number[];
  /**
   * The body of an error met before the handler (e.g. a body that is not UTF-8), for statuses
   * this route documents in a shape of its own; undefined: the standard shapes.
   */
  errorBody?: (err: AppError, status: number) => unknown;
  /** Largest body this operation takes (default BODY_LIMIT_BYTES); 413 beyond. */
  bodyLimitBytes?: number;
  /**
   * Requests of this operation one gateway works on at once; more answer 503 with Retry-After
   * at once (backpressure instead of an unbounded queue when Kafka or PostgreSQL is slow).
   */
  maxInFlight?: number;
  /** Operations sharing one in-flight count (default: this operation alone). */
  inFlightGroup?: string;
  /** Request body media types this operation takes (415 for others); default the JSON trio. */
  requestMediaTypes?: readonly string[];
  /** Request headers the handler reads and validates itself (documentation only). */
  requestHeaders?: z.ZodObject;
  /** Documented response media types; default the JSON trio. */
  responseMediaTypes?: readonly string[];
  handler(input: HandlerInput<z.output<P>, z.output<Q>, BO>): Promise<HandlerResult>;
};

/** Keeps the schema types of one definition tied to its handler's input types. */
export const defineRoute = <P extends z.ZodType, Q extends z.ZodType, B extends z.ZodType, BO = z.output<B>>(
  def: RouteDefinition<P, Q, B, BO>,
): RouteDefinition => def as unknown as RouteDefinition;
