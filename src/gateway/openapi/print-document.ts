// `npm run --silent openapi > openapi.json`: the OpenAPI document the gateway serves at
// /openapi.json, built from the same route definitions without starting anything or connecting
// to PostgreSQL or Kafka (for client generation and linting). Limits in it follow the
// environment, as the served one does.
import { offlineDocument, offlineRoutes } from './offline-routes.js';

const { routes, close } = offlineRoutes();
const document = await offlineDocument(routes);
await close();
// Exit only once the text is out: a pipe takes it asynchronously.
process.stdout.write(`${JSON.stringify(document, null, 2)}\n`, () => process.exit(0));
