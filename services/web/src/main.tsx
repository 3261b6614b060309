// The Chronolog web UI: hash-routed pages that read the HTTP API and follow its live events.
import { render } from "preact";
import { App } from "./app";

render(<App />, document.getElementById("app") as HTMLElement);
