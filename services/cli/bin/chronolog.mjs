#!/usr/bin/env node
// A larger young generation: the scheduler allocates many short-lived objects per event, and
// fewer, larger scavenges cost less in all (set before anything is allocated in earnest).
import v8 from "node:v8";

v8.setFlagsFromString("--max-semi-space-size=32");
await import("../dist/main.js");
