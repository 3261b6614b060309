#!/usr/bin/env -S node --max-semi-space-size=32
// A larger young generation (32 MiB semi-spaces, twice Node's default): the scheduler allocates
// many short-lived objects per event, and fewer, larger scavenges cost less in all. It has to be
// given to node on its command line: set from inside the process, the heap is already sized.
await import("../dist/main.js");
