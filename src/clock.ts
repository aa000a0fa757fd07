/** Every "now" of the service comes from here, so tests can move time (expiry, UTC midnight). */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock tests set by hand. */
export class ManualClock implements Clock {
  constructor(private ms: number) {}
  now() {
    return this.ms;
  }
  set(ms: number) {
    this.ms = ms;
  }
  advance(ms: number) {
    this.ms += ms;
  }
}
