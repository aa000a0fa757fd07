/** `YYYY-MM-DD HH:MM:SS.mmm` UTC, no zone suffix (docs/API.md §1: `datetime`, `first_seen`, `last_seen`). */
export function datetimeText(ms: number): string {
  return new Date(ms).toISOString().replace('T', ' ').slice(0, 23);
}
