/** One line of `npm run bench`: a workload, the service's figure, the baseline's, and their ratio. */
export type BenchRow = { workload: string; service: string; engine: string; ratio: string };
