#!/usr/bin/env python3
"""The "agent-run" workload of caf's benchmark, run through LangGraph's SqliteSaver.

It mirrors `caf_core::workload::agent_run_step` and the loop of `caf bench`
(crates/caf-cli/src/bench.rs), so that the two can be compared side by side:

  E executions x S steps. Step s (1..=S) of an execution appends
  - a thought: 400 bytes of content, type cycling reasoning / observation /
    action by s, confidence 0.85, id `th_NNNN`;
  - a completed tool call: tool cycling search / read_file / write_file /
    run_tests / http_get by s, args {"query": <80 bytes>, "n": s}, a 600-byte
    result, success, started/completed times, id `call_NNNN`; the tool's
    latest result is kept in the results map;
  then sets the variables `step`, `last_tool`, `score` (s / 100), completes a
  step (step_number = s) and saves a full checkpoint of the four parts
  (thought_chain, context, tool_state, progress), each one channel of the
  LangGraph checkpoint, with caf's metadata (checkpoint_reason, step_number,
  tokens_used, duration_ms) beside LangGraph's own (source, step, parents).
  The text fillers are caf's `workload::filler`, byte for byte.

  Then restore-latest of every execution (`get_tuple` of the thread, no
  checkpoint id), then, in a loop of its own, list every execution's
  checkpoints (`list`, consumed).

Only the saver's call is timed: `put` (serialization, INSERT, COMMIT),
`get_tuple` (SELECT, deserialization), `list` (SELECT, one deserialization
per row; the iterator is consumed and each tuple dropped). Building the
checkpoint dict (shallow copies of the state) is not timed, as `caf bench`
does not time building its `Checkpoint`.

The database lives in a fresh temporary directory (under --scratch if given),
opened as LangGraph's docs open it (`sqlite3.connect(path,
check_same_thread=False)`); `setup()` puts it in WAL mode. The saver sets no
`synchronous` mode, so SQLite's default applies: the script reads it back and
reports it.

Prints one JSON object on stdout: median / mean / p95 microseconds per
operation, the SQLite settings, the package versions, E and S.

  --page-floor: after each save (untimed), one 4 KiB page appended into a
  preallocated file and its fdatasync, timed apart and reported as
  page_floor_us: caf bench's page floor (crates/caf-cli/src/bench/floor.rs),
  measured in the peer's own loop, so that its save can be set beside the
  disk it ran on (the flush moves from minute to minute), and so that its
  saves, as caf's, each follow a flush. Sync saves only.

  --async: LangGraph's durability="async": each `put` is handed to one background
  thread (in order, as LangGraph's loop chains them); the hand-over is timed, and
  the time to drain the queue after the last save is reported as drain_us.

  --concurrent N --saves K: N processes each save K checkpoints of their own
  execution (the same growing state) into ONE SQLite file, started together.
  Reports aggregate saves per second and every error, counted by message
  ("database is locked" …); a failed save is not retried.
"""

import argparse
import datetime
import importlib.metadata
import json
import math
import multiprocessing
import os
import platform
import resource
import shutil
import sqlite3
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.base.id import uuid6
from langgraph.checkpoint.sqlite import SqliteSaver

KINDS = ["reasoning", "observation", "action"]
TOOLS = ["search", "read_file", "write_file", "run_tests", "http_get"]
WORDS = ["agent ", "reads ", "the ", "file ", "and ", "plans ", "next ", "step "]
SYNCHRONOUS = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}
PACKAGES = [
    "langgraph-checkpoint-sqlite",
    "langgraph-checkpoint",
    "ormsgpack",
    "aiosqlite",
    "sqlite-vec",
]


def filler(length, seed):
    """caf_core::workload::filler: `length` bytes of ASCII words, varied by `seed`."""
    parts, n, i = [], 0, seed
    while n < length:
        w = WORDS[i % len(WORDS)]
        parts.append(w)
        n += len(w)
        i += 3
    return "".join(parts)[:length]


def now():
    """A timestamp as caf writes one: RFC 3339, UTC, microseconds, `Z`."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Agent:
    """The runtime state of one execution, shaped as caf's snapshot."""

    def __init__(self, agent_id):
        self.agent_id = agent_id
        self.execution_id = f"exec_{uuid.uuid4()}"
        self.started = time.monotonic()
        self.seq = 1
        self.thoughts = []
        self.current_thought_id = None
        self.calls = []
        self.last_call_id = None
        self.results = {}
        self.variables = {}
        self.step_number = 0
        self.parent = None  # the previous checkpoint's id

    def next_id(self, prefix):
        n = self.seq
        self.seq += 1
        return f"{prefix}_{n:04d}"

    def step(self, s):
        """caf_core::workload::agent_run_step."""
        tid = self.next_id("th")
        self.thoughts.append(
            {
                "confidence": 0.85,
                "content": filler(400, s),
                "created_at": now(),
                "id": tid,
                "type": KINDS[s % 3],
            }
        )
        self.current_thought_id = tid
        tool = TOOLS[s % len(TOOLS)]
        cid = self.next_id("call")
        call = {
            "args": {"n": s, "query": filler(80, s + 1)},
            "id": cid,
            "started_at": now(),
            "status": "running",
            "tool_id": tool,
        }
        self.calls.append(call)
        self.last_call_id = cid
        result = filler(600, s + 2)
        call.update(
            completed_at=now(), duration_ms=0, result=result, status="completed", success=True
        )
        self.results[tool] = result
        self.variables.update(step=s, last_tool=tool, score=s / 100)
        self.step_number += 1

    def checkpoint(self, s):
        """A full checkpoint of the state (shallow copies: finished items never change)."""
        ck = empty_checkpoint()
        ck["id"] = str(uuid6(clock_seq=s))
        ck["channel_values"] = {
            "context": {"history": [], "state": {}, "variables": dict(self.variables)},
            "progress": {
                "completed_steps": [],
                "iterations_completed": 0,
                "pending_steps": [],
                "step_number": self.step_number,
            },
            "thought_chain": {
                "current_thought_id": self.current_thought_id,
                "thoughts": list(self.thoughts),
            },
            "tool_state": {
                "calls": list(self.calls),
                "last_call_id": self.last_call_id,
                "results": dict(self.results),
            },
        }
        versions = {k: s for k in ck["channel_values"]}
        ck["channel_versions"] = versions
        metadata = {
            "source": "loop",
            "step": s,
            "parents": {},
            "agent_id": self.agent_id,
            "checkpoint_reason": "step_completed",
            "duration_ms": int((time.monotonic() - self.started) * 1000),
            "step_number": self.step_number,
            "tokens_used": 0,
        }
        config = {"configurable": {"thread_id": self.execution_id, "checkpoint_ns": ""}}
        if self.parent:
            config["configurable"]["checkpoint_id"] = self.parent
        return config, ck, metadata, versions


def quantile(v, q):
    """caf bench's quantile: the sorted sample at round((n - 1) * q)."""
    if not v:
        return 0.0
    v = sorted(v)
    return v[int(math.floor((len(v) - 1) * q + 0.5))]


def stats(v):
    return {
        "median": round(quantile(v, 0.5), 3),
        "mean": round(sum(v) / len(v), 3) if v else 0.0,
        "p95": round(quantile(v, 0.95), 3),
    }


def us_since(t0):
    return (time.perf_counter() - t0) * 1e6


def connect(path):
    """How LangGraph's docs (and SqliteSaver.from_conn_string) open the database."""
    return sqlite3.connect(path, check_same_thread=False)


def sqlite_settings(conn):
    def pragma(name):
        return conn.execute(f"PRAGMA {name}").fetchone()[0]

    sync = pragma("synchronous")
    return {
        "version": sqlite3.sqlite_version,
        "journal_mode": pragma("journal_mode"),
        "synchronous": SYNCHRONOUS.get(sync, str(sync)),
        "wal_autocheckpoint": pragma("wal_autocheckpoint"),
        "page_size": pragma("page_size"),
        "busy_timeout_ms": pragma("busy_timeout"),
        "isolation_level": conn.isolation_level,
    }


def versions():
    out = {}
    for p in PACKAGES:
        try:
            out[p] = importlib.metadata.version(p)
        except importlib.metadata.PackageNotFoundError:
            pass
    return out


def dir_bytes(d):
    total = 0
    for root, _, files in os.walk(d):
        for f in files:
            try:
                total += os.path.getsize(os.path.join(root, f))
            except OSError:
                pass
    return total


class PageFloor:
    """caf bench's page floor: one 4 KiB page appended into a file whose blocks are already
    written and flushed (so that `fdatasync` has no metadata to write), then one `fdatasync`;
    the file is reused from its start when full."""

    SIZE = 16 << 20
    PAGE = 4096

    def __init__(self, path):
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        zeros = bytes(self.PAGE)
        for at in range(0, self.SIZE, self.PAGE):
            os.pwrite(self.fd, zeros, at)
        os.fsync(self.fd)
        self.at = 0
        self.page = b"\x5a" * self.PAGE

    def append(self):
        """Appends a page and flushes it: the microseconds that took."""
        if self.at + self.PAGE > self.SIZE:
            self.at = 0
        t0 = time.perf_counter()
        os.pwrite(self.fd, self.page, self.at)
        os.fdatasync(self.fd)
        us = us_since(t0)
        self.at += self.PAGE
        return us

    def close(self):
        os.close(self.fd)


def single(executions, steps, scratch, background=False, page_floor=False):
    tmp = tempfile.mkdtemp(prefix=".caf-peer-langgraph-", dir=scratch)
    try:
        conn = connect(os.path.join(tmp, "langgraph.db"))
        saver = SqliteSaver(conn)
        saver.setup()
        settings = sqlite_settings(conn)
        save, restore, listing = [], [], []
        serde_type, last_bytes = None, 0
        agents = []
        # --async: LangGraph's durability="async" hands each put to a background thread (its
        # Pregel loop submits it to an executor and chains it after the previous one); one
        # worker thread keeps the order. Only the hand-over is timed, as caf's async mode
        # times its own.
        pool = ThreadPoolExecutor(max_workers=1) if background else None
        pending = []
        floor = PageFloor(os.path.join(tmp, "page.bin")) if page_floor and not background else None
        pages = []
        for e in range(executions):
            agent = Agent(f"bench-agent-{e}")
            agents.append(agent)
            for s in range(1, steps + 1):
                agent.step(s)
                config, ck, metadata, new_versions = agent.checkpoint(s)
                t0 = time.perf_counter()
                if pool is None:
                    out = saver.put(config, ck, metadata, new_versions)
                    save.append(us_since(t0))
                    agent.parent = out["configurable"]["checkpoint_id"]
                    if floor is not None:
                        pages.append(floor.append())
                else:
                    pending.append(pool.submit(saver.put, config, ck, metadata, new_versions))
                    save.append(us_since(t0))
                    agent.parent = ck["id"]  # what put returns as checkpoint_id
        drain_us = None
        if pool is not None:
            # Everything queued is written before anything is read.
            t0 = time.perf_counter()
            for f in pending:
                f.result()  # a failed put raises here
            pool.shutdown(wait=True)
            drain_us = round(us_since(t0), 3)
        # What the saves wrote is on disk before the restores are timed, as `caf bench` does
        # (`sync`; LangGraph's commits are flushed already).
        os.sync()
        # Every restore, then every listing (as `caf bench` does): a listing decodes each
        # checkpoint whole, and a `get_tuple` right after one took ~30 % longer.
        for agent in agents:
            config = {"configurable": {"thread_id": agent.execution_id, "checkpoint_ns": ""}}
            t0 = time.perf_counter()
            tup = saver.get_tuple(config)
            restore.append(us_since(t0))
            values = tup.checkpoint["channel_values"]
            if (
                tup.config["configurable"]["checkpoint_id"] != agent.parent
                or values["progress"]["step_number"] != steps
                or len(values["thought_chain"]["thoughts"]) != steps
                or len(values["tool_state"]["calls"]) != steps
            ):
                raise SystemExit(f"restore-latest of {agent.execution_id} is not the last save")
            del tup, values
        for agent in agents:
            # Consumed as a stream, each tuple dropped once counted (keeping them all alive would
            # add garbage-collection time that the saver is not to blame for).
            t0 = time.perf_counter()
            n = sum(1 for _ in saver.list({"configurable": {"thread_id": agent.execution_id}}))
            listing.append(us_since(t0))
            if n != steps:
                raise SystemExit(f"listed {n} of {steps} checkpoints")
        serde_type, blob = conn.execute(
            "SELECT type, length(checkpoint) FROM checkpoints ORDER BY rowid DESC LIMIT 1"
        ).fetchone()
        last_bytes = blob
        conn.close()
        if floor is not None:
            floor.close()
            os.remove(os.path.join(tmp, "page.bin"))
        disk = dir_bytes(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    s, r, li = stats(save), stats(restore), stats(listing)
    floor_figures = {}
    if pages:
        pf = stats(pages)
        floor_figures = {"page_floor_us": pf["median"], "page_floor_mean_us": pf["mean"]}
    return {
        "peer": "langgraph",
        "saver": "SqliteSaver",
        "workload": "agent-run",
        "durability": "async" if background else "sync",
        "drain_us": drain_us,
        "executions": executions,
        "steps": steps,
        "statistic": "median",
        "save_us": s["median"],
        "save_mean_us": s["mean"],
        "save_p95_us": s["p95"],
        "restore_us": r["median"],
        "restore_mean_us": r["mean"],
        "restore_p95_us": r["p95"],
        "list_us": li["median"],
        "list_mean_us": li["mean"],
        "list_p95_us": li["p95"],
        "disk_bytes": disk,
        "checkpoint_bytes_last": last_bytes,
        "serde": serde_type,
        "sqlite": settings,
        "packages": versions(),
        "python": platform.python_version(),
        **floor_figures,
    }


def cpu_s():
    """The CPU time this process has spent so far (user and system), in seconds."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def worker(path, w, saves, barrier, results):
    conn = connect(path)
    saver = SqliteSaver(conn)
    saver.is_setup = True  # the parent created the tables; setup() would write again
    agent = Agent(f"concurrent-agent-{w}")
    ok, errors = 0, {}
    barrier.wait()
    t0 = time.perf_counter()
    cpu0 = cpu_s()
    for s in range(1, saves + 1):
        agent.step(s)
        config, ck, metadata, new_versions = agent.checkpoint(s)
        try:
            out = saver.put(config, ck, metadata, new_versions)
            agent.parent = out["configurable"]["checkpoint_id"]
            ok += 1
        except Exception as e:  # noqa: BLE001 - every error is counted, by message
            key = f"{type(e).__name__}: {e}"
            errors[key] = errors.get(key, 0) + 1
            try:
                conn.rollback()
            except sqlite3.Error:
                pass
    elapsed = time.perf_counter() - t0
    conn.close()
    cpu = cpu_s() - cpu0
    results.put(
        {"worker": w, "saved": ok, "errors": errors, "seconds": elapsed, "cpu_s": cpu, "end": time.time()}
    )


def concurrent(processes, saves, scratch):
    tmp = tempfile.mkdtemp(prefix=".caf-peer-langgraph-", dir=scratch)
    try:
        path = os.path.join(tmp, "langgraph.db")
        conn = connect(path)
        saver = SqliteSaver(conn)
        saver.setup()
        settings = sqlite_settings(conn)
        conn.close()
        ctx = multiprocessing.get_context("spawn")
        barrier = ctx.Barrier(processes + 1)
        results = ctx.Queue()
        procs = [
            ctx.Process(target=worker, args=(path, w, saves, barrier, results))
            for w in range(processes)
        ]
        for p in procs:
            p.start()
        barrier.wait()  # every worker is connected and ready
        t0 = time.perf_counter()
        reports = [results.get() for _ in procs]
        wall = time.perf_counter() - t0
        for p in procs:
            p.join()
        crashed = [p.exitcode for p in procs if p.exitcode != 0]
        conn = connect(path)
        rows = conn.execute("SELECT count(*) FROM checkpoints").fetchone()[0]
        conn.close()
        disk = dir_bytes(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    saved = sum(r["saved"] for r in reports)
    errors = {}
    for r in reports:
        for k, n in r["errors"].items():
            errors[k] = errors.get(k, 0) + n
    return {
        "peer": "langgraph",
        "saver": "SqliteSaver",
        "workload": "agent-run, concurrent",
        "processes": processes,
        "saves_each": saves,
        "seconds": round(wall, 3),
        "saves_per_s": round(saved / wall, 1) if wall > 0 else 0.0,
        "saved": saved,
        "rows": rows,
        "lost": saved - rows,
        "errors": sum(errors.values()),
        "error_kinds": errors,
        "workers_crashed": len(crashed),
        # CPU time of the workers (user and system) per save that returned.
        "cpu_us_per_save": round(sum(r["cpu_s"] for r in reports) * 1e6 / max(saved, 1)),
        "disk_bytes": disk,
        "sqlite": settings,
        "packages": versions(),
        "python": platform.python_version(),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--executions", "-E", type=int, default=20)
    ap.add_argument("--steps", "-S", type=int, default=100)
    ap.add_argument("--scratch", help="where to create the temporary directory")
    ap.add_argument(
        "--async",
        dest="background",
        action="store_true",
        help="LangGraph's async durability: each put on a background thread, in order",
    )
    ap.add_argument(
        "--page-floor",
        action="store_true",
        help="after each sync save (untimed), time one 4 KiB append and its fdatasync",
    )
    ap.add_argument("--concurrent", type=int, metavar="N", help="N processes, one SQLite file")
    ap.add_argument("--saves", type=int, default=250, metavar="K", help="saves per process")
    a = ap.parse_args()
    if a.concurrent is not None:
        if a.concurrent < 1 or a.saves < 1:
            ap.error("--concurrent and --saves must be at least 1")
        report = concurrent(a.concurrent, a.saves, a.scratch)
    else:
        if a.executions < 1 or a.steps < 1:
            ap.error("--executions and --steps must be at least 1")
        report = single(a.executions, a.steps, a.scratch, a.background, a.page_floor)
    json.dump(report, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
