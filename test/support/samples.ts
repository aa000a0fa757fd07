import { fileURLToPath } from 'node:url';

/** `shared/samples/` beside the project root (the brief's layout, in CI too). */
export const SAMPLES = fileURLToPath(new URL('../../../shared/samples/', import.meta.url));
export const POLYMARKET_SAMPLES = `${SAMPLES}polymarket`;
