// Asking before an action: a component holds the one dialog, and `useConfirm()` opens it.
import { type ComponentChildren, createContext } from "preact";
import { useContext, useEffect, useRef, useState } from "preact/hooks";

export interface ConfirmField {
  readonly name: string;
  readonly label: string;
  readonly placeholder?: string;
  /** What the input holds when the dialog opens (empty by default). */
  readonly value?: string;
}

/** An action to confirm: `what` says what will happen; `fields` are inputs it needs. */
export interface Confirmation {
  readonly title: string;
  readonly what: string;
  readonly fields?: readonly ConfirmField[];
  /** The Confirm button's text. */
  readonly ok?: string;
  /** Does the action with the fields' values; a throw shows its message in the dialog. */
  readonly run: (values: Record<string, string>) => unknown;
}

const Ask = createContext<(c: Confirmation) => void>(() => {});

/** Opens the confirmation dialog for an action. */
export const useConfirm = (): ((c: Confirmation) => void) => useContext(Ask);

/**
 * Gives its children `useConfirm()`, and shows the dialog after them while one is asked. Each
 * request is a new dialog (a key of its own): its fields, error and focus start afresh.
 */
export function ConfirmProvider({ children }: { children: ComponentChildren }) {
  const [asked, setAsked] = useState<{ c: Confirmation; n: number } | null>(null);
  const [ask] = useState(() => (c: Confirmation) => setAsked((a) => ({ c, n: (a?.n ?? 0) + 1 })));
  return (
    <Ask.Provider value={ask}>
      {children}
      {asked && <ConfirmDialog key={asked.n} confirmation={asked.c} onClose={() => setAsked(null)} />}
    </Ask.Provider>
  );
}

function ConfirmDialog({ confirmation: o, onClose }: { confirmation: Confirmation; onClose: () => void }) {
  const fields = o.fields ?? [];
  const [values, setValues] = useState(() => Object.fromEntries(fields.map((f) => [f.name, f.value ?? ""])));
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const box = useRef<HTMLDivElement>(null);
  // Focus moves into the dialog when it opens: its first field, or its Confirm button.
  useEffect(() => {
    box.current?.querySelector<HTMLElement>("input, button.primary")?.focus();
  }, []);
  const ok = async () => {
    setBusy(true);
    try {
      await o.run(values);
      onClose();
    } catch (e) {
      setError((e as Error).message);
      setBusy(false);
    }
  };
  return (
    <div class="backdrop">
      <div
        class="dialog"
        ref={box}
        role="dialog"
        aria-modal="true"
        aria-labelledby="confirm-title"
        data-testid="confirm"
        onKeyDown={(e) => e.key === "Escape" && onClose()}
      >
        <h2 id="confirm-title">{o.title}</h2>
        <p data-testid="confirm-what">{o.what}</p>
        {fields.map((f, i) => (
          <label>
            {f.label}
            <input
              name={f.name}
              value={values[f.name]}
              placeholder={f.placeholder ?? ""}
              autofocus={i === 0}
              onInput={(e) => setValues({ ...values, [f.name]: e.currentTarget.value })}
            />
          </label>
        ))}
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
        <div class="buttons">
          <button
            type="button"
            class="primary"
            data-testid="confirm-ok"
            disabled={busy}
            onClick={ok}
            autofocus={fields.length === 0}
          >
            {o.ok ?? "Confirm"}
          </button>
          <button type="button" onClick={onClose}>
            Cancel
          </button>
        </div>
      </div>
    </div>
  );
}
