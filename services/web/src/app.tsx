// The frame of the UI: login, the header with its navigation, and the page the route names.
import type { FunctionComponent } from "preact";
import { useEffect, useState } from "preact/hooks";
import { clearToken, get, getToken } from "./api";
import { ConfirmProvider } from "./confirm";
import { live } from "./live";
import { LiveStatus } from "./live-status";
import { Login } from "./login";
import { GraphPage } from "./pages/graph";
import { GridPage } from "./pages/grid";
import { LogPage } from "./pages/log";
import { OutputPage } from "./pages/output";
import { RunPage } from "./pages/run";
import { RunsPage } from "./pages/runs";
import { TaskPage } from "./pages/task";
import { WorkersPage } from "./pages/workers";
import { href, useRoute } from "./router";
import type { Whoami } from "./schemas";

/** What every page is given: the route's argument and query, and who the token is. */
export interface PageProps {
  readonly arg: string;
  readonly q: URLSearchParams;
  readonly who: Whoami | null;
}

const PAGES: Record<string, FunctionComponent<PageProps>> = {
  grid: GridPage,
  graph: GraphPage,
  task: TaskPage,
  run: RunPage,
  runs: RunsPage,
  log: LogPage,
  output: OutputPage,
  workers: WorkersPage,
};

export function App() {
  const route = useRoute();
  const [who, setWho] = useState<Whoami | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [attempt, setAttempt] = useState(0);
  useEffect(() => {
    if (!getToken()) return;
    get("/ui/whoami").then(
      (r) => {
        setWho(r.value);
        setError(null);
        live.start(r.value.eventTypes, r.value.position);
      },
      (e: Error) => {
        clearToken();
        setError(e.message);
      },
    );
  }, [attempt]);
  if (!getToken() || !who) return <Login error={error} onIn={() => setAttempt((a) => a + 1)} />;
  const at = route.q.get("at");
  const nav = (page: string, text: string) => (
    <a class={route.page === page ? "current" : ""} href={href(page, "", { at })}>
      {text}
    </a>
  );
  const Page = PAGES[route.page] ?? GridPage;
  return (
    <div>
      <ConfirmProvider>
        <header>
          <strong class="brand">Chronolog</strong>
          <nav>
            {nav("grid", "Grid")} {nav("graph", "Graph")} {nav("runs", "Runs")} {nav("workers", "Workers")}{" "}
            {nav("log", "Log")}
          </nav>
          <LiveStatus />
          <span class="who" data-testid="who">
            {who.name} ({who.scope})
          </span>
          <button
            type="button"
            onClick={() => {
              clearToken();
              live.stop();
              setWho(null);
            }}
          >
            Log out
          </button>
        </header>
        <main>
          <Page key={`${route.page}/${route.arg}`} arg={route.arg} q={route.q} who={who} />
        </main>
      </ConfirmProvider>
    </div>
  );
}
