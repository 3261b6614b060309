import { useState } from "preact/hooks";
import { setToken } from "./api";

/** Asks for a token; `onIn` once one is kept (whoami then says whether it is good). */
export function Login({ onIn, error }: { onIn: () => void; error: string | null }) {
  const [t, setT] = useState("");
  return (
    <form
      class="login card"
      onSubmit={(e) => {
        e.preventDefault();
        setToken(t.trim());
        onIn();
      }}
    >
      <h1>Chronolog</h1>
      <p>
        Log in with a token from <code>chronolog token create NAME --scope read|operate|admin</code>.
      </p>
      <label>
        Token{" "}
        <input
          name="token"
          type="password"
          autofocus
          value={t}
          onInput={(e) => setT(e.currentTarget.value)}
        />
      </label>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <button class="primary" type="submit">
        Log in
      </button>
    </form>
  );
}
