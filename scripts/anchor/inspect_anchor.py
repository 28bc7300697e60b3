"""The anchor's side of `scripts/bench-throughput --anchor`: Inspect AI
running the same shape as suites/throughput/anchor-6-call on its mock model.

A scripted agent makes six model calls with tools between them: a plan, then
two tasks (write the migration; read and rewrite src/search.py), each task's
turn ending in text. The tools write and read real files in a per-sample copy
of the case's workspace, and a scorer checks both files by machine (the
anchor case's two verifies and its predicate). Inspect writes its eval log as
it always does.

Two scorers, chosen by --verify:
  inline   (equal work) the predicate read in-process: `"idx_search_ts" in
           open(...)`, no process started.
  sandbox  (equal guarantee) the same, and the goal predicate run as a
           process, as Inspect's coding evals verify: the task asks for
           Inspect's local sandbox (`sandbox="local"`, a temp dir per sample)
           and the scorer runs `grep -q idx_search_ts src/search.py` in the
           sample's workspace through `sandbox().exec`; the sample passes only
           when it exits 0. Our harness runs that predicate confined 3 times
           per run and the bench once more; Inspect runs it once, unconfined.

    python inspect_anchor.py --samples N --epochs 3 --workspace DIR --log-dir DIR [--verify inline|sandbox]

prints one JSON line: sample_runs, seconds (the eval call only: interpreter
start and imports are left out; the marginal rate over two sizes removes
the rest of the fixed cost), passed.
"""
import argparse
import json
import os
import shutil
import tempfile
import time

from inspect_ai import Task, eval as inspect_eval
from inspect_ai.dataset import Sample
from inspect_ai.model import (
    ChatMessageAssistant,
    ChatMessageUser,
    ModelOutput,
    ModelUsage,
    execute_tools,
    get_model,
)
from inspect_ai.scorer import Score, Target, accuracy, scorer
from inspect_ai.solver import Generate, TaskState, solver
from inspect_ai.tool import tool
from inspect_ai.util import sandbox, store

SEARCH_PY = (
    '"""/api/search handler."""\n\n'
    "# Ordered by the recency index from migration 0042 (idx_search_ts).\n"
    'SEARCH_SQL = """\nSELECT id, title, created_at\nFROM search_events\n'
    "WHERE query = %(q)s\nORDER BY created_at DESC\nLIMIT 50\n\"\"\"\n"
)
MIGRATION = "db/migrations/0042_search_index.sql"
TASKS = [
    "Add migration 0042: CREATE INDEX CONCURRENTLY idx_search_ts ON search_events(created_at DESC)",
    "Make /api/search order through idx_search_ts",
]


def scripted(input, tools, tool_choice, config):
    """The mock model's reply, by how many replies the conversation holds:
    the same six-call script for every sample, whatever the interleaving.
    Usage is given, as the anchor case's scenario gives it (without it the
    mock model counts tokens with tiktoken, which downloads its tables)."""
    out = reply(sum(1 for m in input if isinstance(m, ChatMessageAssistant)))
    out.usage = ModelUsage(input_tokens=600, output_tokens=100, total_tokens=700)
    return out


def reply(n):
    m = "mockllm/model"
    if n == 1:
        return ModelOutput.for_tool_call(
            m, "write_file", {"path": MIGRATION, "content": "CREATE INDEX CONCURRENTLY idx_search_ts ON search_events (created_at DESC);\n"})
    if n == 3:
        return ModelOutput.for_tool_call(m, "read_file", {"path": "src/search.py"})
    if n == 4:
        return ModelOutput.for_tool_call(m, "write_file", {"path": "src/search.py", "content": SEARCH_PY})
    text = {0: json.dumps({"tasks": TASKS}), 2: "Migration 0042 written.", 5: "search.py now orders through idx_search_ts."}
    return ModelOutput.from_content(m, text.get(n, "done"))


def resolve(path):
    root = store().get("workspace")
    full = os.path.realpath(os.path.join(root, path))
    if not full.startswith(root + os.sep):
        raise ValueError(f"{path} is outside the workspace")
    return full


@tool
def write_file():
    async def execute(path: str, content: str):
        """Write a file in the workspace.

        Args:
            path: Path relative to the workspace.
            content: The file's new content.
        """
        full = resolve(path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(content)
        return f"wrote {len(content)} bytes to {path}"

    return execute


@tool
def read_file():
    async def execute(path: str):
        """Read a file in the workspace.

        Args:
            path: Path relative to the workspace.
        """
        with open(resolve(path)) as f:
            return f.read()

    return execute


@solver
def six_call_agent(workspace_src):
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        ws = tempfile.mkdtemp(prefix="anchor-ws-")
        shutil.copytree(workspace_src, ws, dirs_exist_ok=True)
        store().set("workspace", os.path.realpath(ws))
        tools = [write_file(), read_file()]
        model = get_model()
        plan = await model.generate(state.messages, tools=tools)
        state.messages.append(plan.message)
        for task in TASKS:
            state.messages.append(ChatMessageUser(content=task))
            while True:
                out = await model.generate(state.messages, tools=tools)
                state.messages.append(out.message)
                if not out.message.tool_calls:
                    break
                result = await execute_tools(state.messages, tools)
                state.messages.extend(result.messages)
        state.output = out
        return state

    return solve


# The anchor case's goal predicate (suites/throughput/anchor-6-call/run.toml).
PREDICATE = ["grep", "-q", "idx_search_ts", "src/search.py"]


@scorer(metrics=[accuracy()])
def both_files_hold_the_index(run_predicate: bool):
    async def score(state: TaskState, target: Target) -> Score:
        ws = store().get("workspace")
        if run_predicate:
            # cwd absolute: the local sandbox runs it there, on this machine.
            result = await sandbox().exec(PREDICATE, cwd=ws, timeout=60)
            if not result.success:
                shutil.rmtree(ws, ignore_errors=True)
                return Score(value=0, explanation=f"predicate exited {result.returncode}")
        ok = all(
            "idx_search_ts" in open(os.path.join(ws, p)).read()
            for p in (MIGRATION, "src/search.py")
            if os.path.exists(os.path.join(ws, p))
        ) and os.path.exists(os.path.join(ws, MIGRATION))
        shutil.rmtree(ws, ignore_errors=True)
        return Score(value=1 if ok else 0)

    return score


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, required=True)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--workspace", required=True)
    ap.add_argument("--log-dir", required=True)
    ap.add_argument("--verify", choices=["inline", "sandbox"], default="inline")
    a = ap.parse_args()
    with_sandbox = a.verify == "sandbox"
    task = Task(
        dataset=[Sample(input="Make /api/search order its results through idx_search_ts.", id=i) for i in range(a.samples)],
        solver=six_call_agent(a.workspace),
        scorer=both_files_hold_the_index(with_sandbox),
        sandbox="local" if with_sandbox else None,
    )
    model = get_model("mockllm/model", custom_outputs=scripted)
    t0 = time.perf_counter()
    logs = inspect_eval(task, model=model, epochs=a.epochs, log_dir=a.log_dir, display="none")
    seconds = time.perf_counter() - t0
    log = logs[0]
    passed = 0
    if log.results and log.results.scores:
        acc = log.results.scores[0].metrics["accuracy"].value
        passed = round(acc * a.samples * a.epochs)
    print(json.dumps({"sample_runs": a.samples * a.epochs, "seconds": seconds, "passed": passed,
                      "status": log.status, "verify": a.verify}))


if __name__ == "__main__":
    main()
