import { type Confirmation, useConfirm } from "../confirm";
import type { Whoami } from "../schemas";

/** Whether the token may act (pause, trigger, ...): operate and admin may, read may not. */
export const canOperate = (who: Whoami | null): boolean => who?.scope === "operate" || who?.scope === "admin";

/** A button that asks before its action; not shown to a token that may not act. */
export function ActionButton({ who, label, ...o }: { who: Whoami | null; label: string } & Confirmation) {
  const confirm = useConfirm();
  if (!canOperate(who)) return null;
  return (
    <button type="button" class="action" data-action={label} onClick={() => confirm(o)}>
      {label}
    </button>
  );
}
