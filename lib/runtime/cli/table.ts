/**
 * Aligned columns as kubectl prints them: upper-case headers, columns three spaces apart, no borders.
 * Hand-written: the table libraries on npm draw boxes, which scripts then have to strip.
 */
export function formatTable(headers: readonly string[], rows: readonly (readonly (string | number)[])[]): string {
  const cells = [headers.map((h) => h.toUpperCase()), ...rows.map((r) => r.map(String))];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  return (
    cells
      .map((r) =>
        r
          .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i])))
          .join('   ')
          .trimEnd(),
      )
      .join('\n') + '\n'
  );
}
