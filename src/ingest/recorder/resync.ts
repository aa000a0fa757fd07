import type { SnapshotRow } from '../../clickhouse/rows.js';
import type { SocketEvent } from './market-feed.js';

/**
 * Finds the `resync` capture records (docs/TIME-MACHINE.md §4): an asset that went live on a socket
 * (`open`) is re-synced by the first exchange `book` of it that arrives on that same socket.
 */
export class ResyncTracker {
  /** socket → assets live on it whose first book since they went live has not come yet. */
  private readonly awaitingBook = new Map<number, Set<string>>();
  /** The socket of the frame being normalized: the normalizer's rows do not say where they came from. */
  private frameSocket = 0;
  private resynced: string[] = [];

  onSocketEvent(e: SocketEvent): void {
    // A lost connection owes nothing more; its reconnection opens (and awaits) its assets again.
    if (e.kind === 'close') this.awaitingBook.delete(e.socket);
    else if (e.kind === 'unsubscribe') for (const a of e.assets) this.awaitingBook.get(e.socket)?.delete(a);
    else if (e.kind === 'open') {
      const awaiting = this.awaitingBook.get(e.socket) ?? new Set<string>();
      e.assets.forEach((a) => awaiting.add(a));
      this.awaitingBook.set(e.socket, awaiting);
    }
  }

  /** The rows that follow, up to the next call, come from a frame received on `socket`. */
  frameFrom(socket: number): void {
    this.frameSocket = socket;
  }

  /** A snapshot stored from the current frame; only the exchange's own book (not a checkpoint) re-syncs. */
  onSnapshot(row: Pick<SnapshotRow, 'asset_id' | 'is_checkpoint'>): void {
    if (row.is_checkpoint === 0 && this.awaitingBook.get(this.frameSocket)?.delete(row.asset_id)) this.resynced.push(row.asset_id);
  }

  /** The assets the current frame re-synced, each reported once. */
  takeResynced(): string[] {
    const assets = this.resynced;
    this.resynced = [];
    return assets;
  }
}
