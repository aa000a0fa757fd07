/** A ClickHouse string literal: backslash and quote escaped, nothing else can end it. */
export const sqlString = (s: string) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
