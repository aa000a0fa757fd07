/**
 * A Float64 column as plain decimal text, in SQL: the engine's shortest round-trip digits (what
 * toString prints, the same digits as JavaScript's String), with the exponent forms toString switches
 * to below 1e-6 and from 1e21 written out as digits (src/number-text.ts plainNumberText does the same
 * in JS; a test holds the two equal). Only those rows evaluate the rewrite: if() is short-circuited.
 */
export function plainNumberSql(column: string): string {
  const s = `toString(${column})`;
  const e = `position(${s}, 'e')`;
  // Mantissa digits without sign or point, the position of the point among them after the exponent.
  const mantissa = `replaceOne(substring(${s}, 1, ${e} - 1), '-', '')`;
  const digits = `replaceOne(${mantissa}, '.', '')`;
  const point = `(toInt32(length(splitByChar('.', ${mantissa})[1])) + toInt32(substring(${s}, ${e} + 1)))`;
  const body =
    `multiIf(${point} <= 0, concat('0.', repeat('0', toUInt32(-${point})), ${digits}), ` +
    `${point} >= length(${digits}), concat(${digits}, repeat('0', toUInt32(${point} - length(${digits})))), ` +
    `concat(substring(${digits}, 1, ${point}), '.', substring(${digits}, ${point} + 1)))`;
  return `if(${e} = 0, ${s}, concat(if(${column} < 0, '-', ''), ${body}))`;
}
