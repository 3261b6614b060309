// The fault soak with remote workers on the embedded log (see soak-remote-support.ts).
import { remoteSoak } from "./soak-remote-support.js";

remoteSoak({ backend: "sqlite" });
