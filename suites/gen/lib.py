"""Helpers for writing suite cases from compact Python descriptions.

A `Case` holds everything one case directory needs (case.toml, run.toml,
workspace/, checks/, scenario.json); `Case.write()` materializes it under
suites/<category>/<id>/. The cassette is compiled afterwards with
`bench script` (gen.py does that for every case it writes).

Spend expectations are computed here from the scripted usage and the spec's
prices, exactly as the ledger books them (harness/src/ledger.rs):
    input * p_in + cache_read * p_in * 0.1 + cache_write * p_in * 1.25 + output * p_out
over the calls the harness actually makes (a call marked `unused=True` is in
the cassette but must never be requested; it is left out of the sum).
"""

import hashlib
import json
import math
import os
import shutil
import stat
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SUITES = os.path.join(ROOT, "suites")

# $/MTok (input, output), the prices the cases put in run.toml.
PRICES = {
    "claude-opus-5": (5.0, 25.0),
    "claude-sonnet-5": (3.0, 15.0),
    "claude-haiku-4-5": (1.0, 5.0),
    "claude-opus-4-1": (15.0, 75.0),
    "gpt-5": (1.25, 10.0),
    "gpt-5-mini": (0.25, 2.0),
}

WHEN = "2026-11-30"


def u(inp, out, cr=0, cw=0):
    return {"input_tokens": inp, "output_tokens": out, "cache_read_input_tokens": cr, "cache_creation_input_tokens": cw}


# The harness reserves each attempt's worst case from the request's bytes
# (harness/src/ledger/bound.rs): input tokens at most the wire body's bytes
# plus a small per-protocol allowance, all priced at the highest input rate
# (Anthropic: a cache write, 1.25x), plus max_tokens of output. Scripted usage
# must stay within what its request could bill, or the harness books it and
# ends the run UNRECOVERABLE_ERROR (billed_above_reserve). A case whose story
# needs a large context reads a large file first: its later turns carry it.
EXEC_BODY_FLOOR_BYTES = 3000   # an execute request before any tool output (system prompt, tools, task prompt): ~3.2 KB
EXEC_BODY_SLACK_BYTES = 12000  # what a request may hold beyond the floor and its tool outputs (turn framing, history)
ANTHROPIC_ALLOWANCE_TOKENS = 1024 + 6 * 64 + 40 * 8  # tool-use system prompt, 6 tools, up to 40 messages


def esc_len(text):
    """Bytes a tool output adds to the request body (it travels JSON-escaped)."""
    return len(json.dumps(text)) - 2


def worst_usd(model, body_bytes, max_tokens, allowance=ANTHROPIC_ALLOWANCE_TOKENS):
    """The reservation for a request of `body_bytes` (Anthropic: input at the 1.25x cache-write rate)."""
    pin, pout = PRICES[model]
    return ((body_bytes + allowance) * pin * 1.25 + max_tokens * pout) / 1e6


def cost(usage, model):
    pin, pout = PRICES[model]
    return (usage["input_tokens"] * pin + usage["cache_read_input_tokens"] * pin * 0.1
            + usage["cache_creation_input_tokens"] * pin * 1.25 + usage["output_tokens"] * pout) / 1e6


# ---------------------------------------------------------------- verifies
class V:
    @staticmethod
    def contains(path, text):
        return {"kind": "file_contains", "path": path, "text": text}

    @staticmethod
    def exists(path):
        return {"kind": "file_exists", "path": path}

    @staticmethod
    def absent(path):
        return {"kind": "file_absent", "path": path}

    @staticmethod
    def outbox(key):
        return {"kind": "outbox_has", "key": key}

    @staticmethod
    def migration(name):
        return {"kind": "migration_state", "name": name}

    @staticmethod
    def check(name):
        return {"kind": "check", "name": name}


def task(tid, description, verify):
    return {"id": tid, "description": description, "verify": verify}


# ---------------------------------------------------------------- calls
def call(key, text="", tools=None, usage=None, stop=None, latency=None, faults=None, unused=False):
    c = {"key": key}
    if latency is not None:
        c["latency_ms"] = latency
    if usage is not None:
        c["usage"] = usage
    if text:
        c["text"] = text
    if tools:
        c["tools"] = tools
    if stop:
        c["stop"] = stop
    if faults:
        c["faults_before"] = faults
    if unused:
        c["_unused"] = True
    return c


def plan_call(tasks, key="plan/0", usage=None, latency=None, prose=None, **kw):
    body = json.dumps({"tasks": tasks})
    text = body if prose is None else prose.replace("{PLAN}", body)
    return call(key, text=text, usage=usage, latency=latency, **kw)


def judge_call(key, reasoning, off, score, usage=None, **kw):
    body = json.dumps({"reasoning": reasoning, "off_goal_task_ids": off, "drift_score": score})
    return call(key, text=body, usage=usage, **kw)


# Actions for `steps`: (tool_name, input) pairs.
def write(path, content):
    return ("write_file", {"path": path, "content": content})


def read(path):
    return ("read_file", {"path": path})


def ls(path="."):
    return ("list_files", {"path": path})


def post(channel, text, key):
    return ("post_message", {"channel": channel, "text": text, "idempotency_key": key})


def migrate(name):
    return ("apply_migration", {"name": name})


def run_check(name):
    return ("run_check", {"name": name})


def steps(tid, actions, final, attempt=0, start_turn=0, texts=None):
    """One attempt of a task: one call per action (a tool call), then a final
    call with `final` text and no tool (None = the attempt ends without a
    final text call, e.g. when a repeated call or the loop cap ends it)."""
    out = []
    turn = start_turn
    for i, a in enumerate(actions):
        if isinstance(a, dict):  # a fully built call (e.g. a refusal) at this turn
            a = dict(a)
            a["key"] = f"execute/{tid}/a{attempt}/{turn}"
            out.append(a)
        else:
            name, inp = a
            t = texts[i] if texts and i < len(texts) else ""
            out.append(call(f"execute/{tid}/a{attempt}/{turn}", text=t, tools=[{"name": name, "input": inp}]))
        turn += 1
    if final is not None:
        out.append(call(f"execute/{tid}/a{attempt}/{turn}", text=final))
    return out


# ---------------------------------------------------------------- TOML
def toml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        r = repr(v)
        return r if ("." in r or "e" in r) else r + ".0"
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{toml_key(k)} = {toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(type(v))


def toml_key(k):
    import re
    return k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else json.dumps(k)


# ---------------------------------------------------------------- the case
class Case:
    def __init__(self, cid, category, title, covers, goal):
        self.id = cid
        self.category = category
        self.title = title
        self.covers = covers
        self.goal = goal
        self.files = {}            # workspace path -> content
        self.checks = {}           # name -> (filename, script text) or ["argv", ...]
        self.predicate = None      # ("check", name) or ("command", argv)
        self.cap = 28.0
        self.wall = 28800
        self.task_budget = 74700
        self.protocol = "anthropic"
        self.planner = None
        self.executor = "claude-opus-5"
        self.judge = None
        self.max_tokens = 8192
        self.http_attempts = None
        self.loop = {}
        self.drift = {}
        self.memory = {}           # [memory]: lessons, compact_above_tokens, ...
        self.tools = ["read_file", "write_file", "list_files", "post_message", "apply_migration", "run_check"]
        self.runs = []             # list of list of calls
        self.expect = {}
        self.case_extra = {}       # faults, latency_scale, workspace_git
        self.interrupt = None
        self.interrupt_signal = None  # [interrupt] signal: SIGTERM, SIGINT, SIGHUP (default SIGKILL)
        self.stop_report = {}      # [interrupt.stop_report]: in_flight_task, cut_contains
        self.steps = []            # [[step]]: dicts (bench/src/suite.rs Step)
        self.raise_ = {}           # [raise]: cap_usd or wall_clock_s
        self.deliberate = {}       # [deliberate]: misuses the calls script on purpose (tools, verify_kinds, checks)
        self.latency_cap_ms = 20000
        self.cost_cap_usd = None
        self.notes = ""
        self.comment = ""          # goes at the top of case.toml
        self.spend_slack = 1e-6
        self.auto_spend = True
        self.extra_files = {}      # case-dir relative path -> (content, executable)
        self.scenario_from = None  # a script in the case dir that writes scenario.json

    # -- building
    def ws(self, path, content):
        self.files[path] = content
        return self

    def check_script(self, name, filename, text, timeout=60):
        self.checks[name] = (filename, text, timeout)
        return self

    def check_cmd(self, name, argv, timeout=30):
        self.checks[name] = (None, argv, timeout)
        return self

    def run(self, calls):
        self.runs.append(calls)
        return self

    # -- models
    def model_for(self, key):
        role = key.split("/")[0]
        if role in ("plan", "replan", "compact"):
            return self.planner or self.executor
        if role == "judge":
            return self.judge or self.executor
        return self.executor

    def models(self):
        ms = [self.executor]
        for m in (self.planner, self.judge):
            if m and m not in ms:
                ms.append(m)
        return ms

    # -- default usage: realistic, deterministic, varied per case and call
    def fill_usage(self):
        for ri, calls in enumerate(self.runs):
            first_exec = True
            for c in calls:
                if "usage" in c:
                    if c["key"].startswith("execute/"):
                        first_exec = False
                    continue
                h = int(hashlib.sha256(f"{self.id}/{ri}/{c['key']}".encode()).hexdigest()[:8], 16)
                role = c["key"].split("/")[0]
                if role in ("plan", "replan"):
                    c["usage"] = u(1600 + h % 1400, 280 + h % 520)
                elif role == "judge":
                    c["usage"] = u(650 + h % 500, 140 + h % 220)
                elif role in ("lesson", "compact"):
                    # Small structured calls: the prompt is the attempt's
                    # observations (or the history), the reply one JSON object.
                    c["usage"] = u(900 + h % 600, 90 + h % 160)
                else:
                    turn = int(c["key"].rsplit("/", 1)[1])
                    inp = 420 + turn * 610 + h % 380
                    out = 60 + h % 340
                    if self.protocol == "openai":
                        c["usage"] = u(inp + 2600, out, cr=(2600 if not first_exec else 0))
                    elif first_exec:
                        c["usage"] = u(inp, out, cw=2850)
                    else:
                        c["usage"] = u(inp, out, cr=2850)
                    first_exec = False

    def spend(self, ri):
        return sum(cost(c["usage"], self.model_for(c["key"])) for c in self.runs[ri] if not c.get("_unused"))

    # -- writing
    def dir(self):
        return os.path.join(SUITES, self.category, self.id)

    def run_toml(self):
        L = []
        L.append(f"# {self.title}")
        L.append(f"goal = {toml_value(self.goal)}")
        L.append('workspace = "workspace"')
        L.append("")
        L.append("[predicate]")
        kind, val = self.predicate
        if kind == "check":
            L.append(f"check = {toml_value(val)}")
        else:
            L.append(f"command = {toml_value(val)}")
            L.append("timeout_s = 30")
        L.append("")
        L.append("[budget]")
        L.append(f"hard_cap_usd = {toml_value(float(self.cap))}")
        L.append(f"wall_clock_limit_s = {toml_value(self.wall)}")
        L.append(f"task_budget_tokens = {self.task_budget}")
        L.append("")
        L.append("[model]")
        L.append(f"protocol = {toml_value(self.protocol)}")
        if self.protocol == "anthropic":
            L.append('base_url = "https://api.anthropic.com"')
            L.append('api_key_env = "ANTHROPIC_API_KEY"')
        else:
            L.append('base_url = "https://api.openai.com/v1"')
            L.append('api_key_env = "OPENAI_API_KEY"')
        if self.planner:
            L.append(f"planner = {toml_value(self.planner)}")
        L.append(f"executor = {toml_value(self.executor)}")
        L.append(f"judge = {toml_value(self.judge or self.executor)}")
        L.append(f"max_tokens = {self.max_tokens}")
        if self.http_attempts:
            L.append(f"http_attempts = {self.http_attempts}")
        for m in self.models():
            L.append("")
            L.append(f'[prices."{m}"]')
            L.append(f"input_usd_per_mtok = {toml_value(PRICES[m][0])}")
            L.append(f"output_usd_per_mtok = {toml_value(PRICES[m][1])}")
        if self.loop:
            L.append("")
            L.append("[loop]")
            for k, v in self.loop.items():
                L.append(f"{k} = {toml_value(v)}")
        if self.drift:
            L.append("")
            L.append("[drift]")
            for k, v in self.drift.items():
                L.append(f"{k} = {toml_value(v)}")
        if self.memory:
            L.append("")
            L.append("[memory]")
            for k, v in self.memory.items():
                L.append(f"{k} = {toml_value(v)}")
        L.append("")
        L.append("[tools]")
        L.append(f"allow = {toml_value(self.tools)}")
        for name, (fn, val, timeout) in self.checks.items():
            L.append("")
            L.append(f"[checks.{name}]")
            if fn:
                L.append(f'command = ["./checks/{fn}"]')
            else:
                L.append(f"command = {toml_value(val)}")
            L.append(f"timeout_s = {timeout}")
        return "\n".join(L) + "\n"

    def case_toml(self):
        L = []
        if self.comment:
            for line in self.comment.strip().splitlines():
                L.append(f"# {line}".rstrip())
        L.append(f"id = {toml_value(self.id)}")
        L.append(f"category = {toml_value(self.category)}")
        L.append(f"title = {toml_value(self.title)}")
        L.append(f"covers = {toml_value(self.covers)}")
        L.append(f"latency_cap_ms = {self.latency_cap_ms}")
        L.append(f"cost_cap_usd = {toml_value(float(self.cost_cap_usd))}")
        for k, v in self.case_extra.items():
            L.append(f"{k} = {toml_value(v)}")
        if self.interrupt:
            L.append("")
            L.append("[interrupt]")
            L.append(f"at = {toml_value(self.interrupt)}")
            if self.interrupt_signal:
                L.append(f"signal = {toml_value(self.interrupt_signal)}")
            if self.stop_report:
                L.append(f"stop_report = {toml_value(self.stop_report)}")
        if self.raise_:
            L.append("")
            L.append("[raise]")
            for k, v in self.raise_.items():
                L.append(f"{k} = {toml_value(v)}")
        for st in self.steps:
            L.append("")
            L.append("[[step]]")
            for k, v in st.items():
                L.append(f"{toml_key(k)} = {toml_value(v)}")
        if self.deliberate:
            L.append("")
            L.append("[deliberate]")
            for k, v in self.deliberate.items():
                L.append(f"{k} = {toml_value(v)}")
        L.append("")
        L.append("[expect]")
        for k, v in self.expect.items():
            L.append(f"{toml_key(k)} = {toml_value(v)}")
        return "\n".join(L) + "\n"

    def scenario(self):
        runs = []
        for calls in self.runs:
            runs.append({"calls": [{k: v for k, v in c.items() if not k.startswith("_")} for c in calls]})
        return {"case": self.id, "protocol": self.protocol, "model": self.executor, "when": WHEN,
                "notes": self.notes or self.title, "runs": runs}

    def finalize(self):
        self.fill_usage()
        spends = [self.spend(i) for i in range(len(self.runs))]
        lo, hi = min(spends), max(spends)
        if self.auto_spend:
            self.expect.setdefault("spend_usd_min", float(f"{max(0.0, lo - self.spend_slack):.6f}"))
            self.expect.setdefault("spend_usd_max", float(f"{hi + self.spend_slack:.6f}"))
        if self.cost_cap_usd is None:
            self.cost_cap_usd = min(max(0.05, math.ceil(hi * 1.25 * 100) / 100), float(self.cap))
        return lo, hi

    def write(self):
        d = self.dir()
        if os.path.isdir(d):
            shutil.rmtree(d)
        os.makedirs(d)
        if self.scenario_from:
            name, text = self.scenario_from
            sp = os.path.join(d, name)
            with open(sp, "w") as f:
                f.write(text)
            os.chmod(sp, 0o755)
            subprocess.run(["python3", name], cwd=d, check=True)
            with open(os.path.join(d, "scenario.json")) as f:
                self.runs = [r["calls"] for r in json.load(f)["runs"]]
        self.finalize()
        with open(os.path.join(d, "case.toml"), "w") as f:
            f.write(self.case_toml())
        with open(os.path.join(d, "run.toml"), "w") as f:
            f.write(self.run_toml())
        os.makedirs(os.path.join(d, "workspace"), exist_ok=True)
        for p, content in self.files.items():
            fp = os.path.join(d, "workspace", p)
            os.makedirs(os.path.dirname(fp), exist_ok=True)
            with open(fp, "w") as f:
                f.write(content)
        for name, (fn, val, _t) in self.checks.items():
            if fn:
                fp = os.path.join(d, "checks", fn)
                os.makedirs(os.path.dirname(fp), exist_ok=True)
                with open(fp, "w") as f:
                    f.write(val)
                os.chmod(fp, 0o755)
        for rel, (content, exe) in self.extra_files.items():
            fp = os.path.join(d, rel)
            os.makedirs(os.path.dirname(fp), exist_ok=True)
            with open(fp, "w") as f:
                f.write(content)
            if exe:
                os.chmod(fp, 0o755)
        if not self.scenario_from:
            with open(os.path.join(d, "scenario.json"), "w") as f:
                json.dump(self.scenario(), f, indent=1, ensure_ascii=False)
                f.write("\n")
        return d


def spend_trace(c, ri=0):
    """[(key, spend_before, cost)] for the calls the harness makes, in order."""
    out, s = [], 0.0
    for k in c.runs[ri]:
        if k.get("_unused"):
            continue
        x = cost(k["usage"], c.model_for(k["key"]))
        out.append((k["key"], s, x))
        s += x
    return out


def expected_notices(c, ri=0):
    """Execute requests sent at or above 70% of the cap carry the budget notice."""
    return sum(1 for key, before, _ in spend_trace(c, ri) if key.startswith("execute/") and before / c.cap >= 0.7)
