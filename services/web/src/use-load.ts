import { type Inputs, useEffect, useState } from "preact/hooks";

export interface Loaded<T> {
  readonly data: T | null;
  readonly error: Error | null;
  readonly loading: boolean;
}

/** Loads `fn()` again whenever a dependency changes; { data, error, loading }. */
export function useLoad<T>(fn: () => Promise<T>, deps: Inputs): Loaded<T> {
  const [r, setR] = useState<Loaded<T>>({ data: null, error: null, loading: true });
  useEffect(() => {
    let stale = false;
    fn().then(
      (data) => !stale && setR({ data, error: null, loading: false }),
      (error: Error) => !stale && setR((x) => ({ data: x.data, error, loading: false })),
    );
    return () => {
      stale = true;
    };
  }, deps);
  return r;
}
