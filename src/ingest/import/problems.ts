/** A problem with the input of an import (docs/INGEST.md §6.5): where it is, and what is wrong. */
export interface ImportProblem {
  file: string;
  /** `line N`, `row group N`, `row group N, row M`; empty for the whole file. */
  where: string;
  message: string;
}

export function problemText(p: ImportProblem): string {
  return `${p.file}${p.where ? ` ${p.where}` : ''}: ${p.message}`;
}
