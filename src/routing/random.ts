// The search's only source of chance: a seeded xorshift32, so the same input gives the same routes.
export type Random = () => number;

/** Uniform in [0, 1); the seed must not be 0 (xorshift's fixed point). */
export function seededRandom(seed: number): Random {
  let x = seed >>> 0 || 0x9e3779b9;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x / 4294967296;
  };
}

/** Integer in [0, n). */
export const pick = (rnd: Random, n: number): number => Math.floor(rnd() * n);
