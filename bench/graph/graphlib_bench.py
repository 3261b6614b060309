"""The ten-job graph of bench/graph with asyncio and graphlib, start-when-ready, unlimited and limit 2.

Prints one JSON line: {"unlimited": seconds, "limit2": seconds, "levels": seconds}.
"""
import asyncio
import graphlib
import json
import time

GRAPH = {
    "fetch_a": [], "fetch_b": [], "fetch_c": [],
    "parse_a": ["fetch_a"], "parse_b": ["fetch_b"], "parse_c": ["fetch_c"],
    "join_ab": ["parse_a", "parse_b"], "index_c": ["parse_c"],
    "report": ["join_ab", "index_c"], "notify": ["parse_c"],
}
SLEEP = {
    "fetch_a": 0.30, "fetch_b": 0.05, "fetch_c": 0.10, "parse_a": 0.05, "parse_b": 0.30,
    "parse_c": 0.05, "join_ab": 0.10, "index_c": 0.20, "report": 0.05, "notify": 0.30,
}


async def run(job):
    await asyncio.sleep(SLEEP[job])


async def run_graph(limit=None):
    sorter = graphlib.TopologicalSorter(GRAPH)
    sorter.prepare()
    slots = asyncio.Semaphore(limit or len(GRAPH))
    running = {}

    async def guarded(job):
        async with slots:
            await run(job)

    while sorter.is_active():
        for job in sorter.get_ready():
            running[asyncio.create_task(guarded(job))] = job
        done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            sorter.done(running.pop(task))


async def run_levels():
    sorter = graphlib.TopologicalSorter(GRAPH)
    sorter.prepare()
    while sorter.is_active():
        ready = sorter.get_ready()
        await asyncio.gather(*(run(j) for j in ready))
        sorter.done(*ready)


def timed(coro_fn):
    start = time.perf_counter()
    asyncio.run(coro_fn())
    return time.perf_counter() - start


print(json.dumps({
    "unlimited": timed(lambda: run_graph()),
    "limit2": timed(lambda: run_graph(2)),
    "levels": timed(run_levels),
}))
