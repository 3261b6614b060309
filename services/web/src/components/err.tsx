/** A load's error, as an alert; nothing without one. */
export function Err({ error }: { error: Error | null }) {
  return error ? (
    <p class="error" role="alert">
      {error.message}
    </p>
  ) : null;
}
