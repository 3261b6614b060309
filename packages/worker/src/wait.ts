/**
 * Calls `then` once `ms` have passed and the messages that came in meanwhile have been read: in
 * the turn after the timer's. When this thread was held up for the whole wait (a long garbage
 * collection or write), the timer is due before the messages that arrived in the meantime are
 * read; judged at once, an answer among them would count as missing. Returns what cancels it.
 */
export function afterWait(ms: number, then: () => void): () => void {
  let late: NodeJS.Immediate | undefined;
  const timer = setTimeout(() => {
    late = setImmediate(then);
  }, ms);
  return () => {
    clearTimeout(timer);
    if (late) clearImmediate(late);
  };
}
