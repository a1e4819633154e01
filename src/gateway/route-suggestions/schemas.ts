import { z } from 'zod';

const clock = z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$|^24:00$/, "'HH:MM' (24:00 allowed as an end)");
const point = z
  .strictObject({ latitude: z.number().min(-90).max(90), longitude: z.number().min(-180).max(180) })
  .meta({ id: 'RoutePoint' });

export const createRouteSuggestionSchema = z
  .strictObject({
    name: z.string().trim().min(1).max(200).nullish(),
    date: z.iso.date().meta({ description: 'The day to plan (YYYY-MM-DD), in timeZone.' }),
    timeZone: z.string().max(64).nullish().meta({
      description: 'IANA time zone of the day and the shift (default UTC); target windows are converted to it.',
    }),
    depot: point.meta({ description: 'Where every vehicle starts at shift start.' }),
    endDepot: point.nullish().meta({ description: 'Where vehicles end the day (default: depot).' }),
    vehicles: z.number().int().min(1).max(50).meta({ description: 'Vehicles / technicians available.' }),
    shift: z.strictObject({ start: clock, end: clock }).meta({ description: 'Local shift; end after start.' }),
    maxStopsPerRoute: z.number().int().min(1).max(500).nullish(),
    averageSpeedKmh: z
      .number()
      .min(5)
      .max(130)
      .nullish()
      .meta({ description: 'Driving speed over great-circle distance (default 40 km/h).' }),
  })
  .meta({ id: 'CreateImportJobRouteSuggestionApiRequest' });

export type CreateRouteSuggestion = z.infer<typeof createRouteSuggestionSchema>;

const stopSchema = z
  .strictObject({
    sequence: z.number().int().min(1),
    externalId: z.string().meta({ description: "The target's external id." }),
    coordinates: point,
    arrival: clock.meta({ description: 'Estimated service start (local).' }),
    departure: clock,
    waitMinutes: z.number().int().min(0).meta({ description: 'Waiting for the time window before arrival.' }),
    legDistanceKm: z.number().min(0).meta({ description: 'Great-circle km from the previous stop or the depot.' }),
  })
  .meta({ id: 'RouteSuggestionStop' });

const routeSchema = z
  .strictObject({
    vehicle: z.number().int().min(1),
    stops: z.array(stopSchema),
    distanceKm: z.number().min(0),
    durationMinutes: z.number().min(0),
    start: clock,
    end: clock,
  })
  .meta({ id: 'SuggestedRoute' });

export const routeSuggestionSchema = z
  .strictObject({
    id: z.uuid(),
    importJobId: z.number().int().min(1).meta({ format: 'int64' }),
    name: z.string().nullable(),
    status: z.literal('Draft'),
    createdAt: z.iso.datetime(),
    date: z.iso.date(),
    timeZone: z.string(),
    vehicles: z.number().int(),
    averageSpeedKmh: z.number(),
    routes: z.array(routeSchema),
    unplaced: z.array(
      z
        .strictObject({
          externalId: z.string(),
          reason: z.enum(['NoCoordinates', 'OutsideTimeWindows', 'OverCapacity']),
        })
        .meta({ id: 'UnplacedTarget' }),
    ),
    totalDistanceKm: z.number().min(0),
    totalDurationMinutes: z.number().min(0),
    summary: z.strictObject({ targets: z.number().int(), placed: z.number().int(), unplaced: z.number().int() }),
  })
  .meta({ id: 'RouteSuggestion' });

export type RouteSuggestionDto = z.infer<typeof routeSuggestionSchema>;

export const suggestionIdParamsSchema = z.strictObject({ id: z.uuid() });
