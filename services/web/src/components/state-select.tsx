/** A filter: a select of `options`, with "all" (the empty value) first. */
export function StateSelect({
  label,
  value,
  options,
  onChange,
  name,
}: {
  label: string;
  value: string | null;
  options: readonly string[];
  onChange: (value: string) => void;
  name: string;
}) {
  return (
    <label>
      {label}
      <select name={name} value={value ?? ""} onChange={(e) => onChange(e.currentTarget.value)}>
        <option value="">all</option>
        {options.map((o) => (
          <option value={o}>{o}</option>
        ))}
      </select>
    </label>
  );
}
