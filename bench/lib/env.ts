/** A whole number ≥ min from the environment variable name (unset or empty: def); a bad one stops the bench. */
export function envInt(name: string, def: number, min = 1): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return def;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min)
    throw new Error(`${name} must be an integer ≥ ${min}, not ${JSON.stringify(raw)}`);
  return n;
}
