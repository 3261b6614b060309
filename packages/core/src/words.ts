/**
 * A count with its noun, in the number the count takes: `counted(1, "workflow")` is
 * `1 workflow`, `counted(2, "workflow")` is `2 workflows`, `counted(3, "try", "tries")` is
 * `3 tries`. Every count a person reads goes through it.
 */
export function counted(n: number | bigint, singular: string, plural = `${singular}s`): string {
  return `${n} ${n === 1 || n === 1n ? singular : plural}`;
}
