/**
 * The content codings an `Accept-Encoding` header accepts (RFC 9110 §12.5.3): names lower-cased,
 * `*` kept as it is, codings whose quality is 0 (or not a number) left out. Preferences among the
 * accepted ones are the server's: each caller picks what it can produce.
 */
export function acceptedEncodings(header: string | undefined): Set<string> {
  const accepted = new Set<string>();
  for (const item of (header ?? '').split(',')) {
    const [coding, ...params] = item.trim().toLowerCase().split(';');
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    if (coding.trim() && (q === undefined || Number(q.slice(2)) > 0)) accepted.add(coding.trim());
  }
  return accepted;
}
