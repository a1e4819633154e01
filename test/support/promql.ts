// Metric names in PromQL text, for the checks that keep the dashboard and the alerting rules on
// the names the processes expose.

// PromQL words that look like names: functions are followed by "(", these are not always.
const promqlWords = new Set(
  'by without on ignoring group_left group_right bool and or unless offset sum min max avg count stddev stdvar topk bottomk quantile count_values group inf nan Inf NaN'.split(
    ' ',
  ),
);

/** Metric names an expression selects: what is left once strings, label matchers, ranges, grouping clauses, function calls and numbers are gone. */
export function metricNamesIn(expr: string): string[] {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
    .replace(/(?<![a-zA-Z0-9_:])\d+(?:\.\d+)?(?:e[+-]?\d+)?(?:ms|[smhdwy])*/g, ' '); // numbers, durations
  const names = new Set<string>();
  for (const m of stripped.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)) {
    const rest = stripped.slice(m.index + m[0].length);
    if (/^\s*\(/.test(rest) || promqlWords.has(m[0])) continue;
    names.add(m[0]);
  }
  return [...names];
}
