"""Bounds cases (issue 47): every tool's input and result is bounded, and a
check's output is kept to its tail, through the real binary.

One edge case walks every bound a tool has on a task the bounds do not stop:
the agent reads a long log with a range past the cap, lists a directory with
more entries than a listing shows, edits a file over the edit limit, runs a
command with one argument too many, posts a message one character too long and
runs a check whose output is longer than what is kept. Each answer is in the
next request, which the case checks (request_contains_in_order), and what
must not be there (the head of the long check output) is checked too
(request_excludes). The task is then done with small writes.
"""

from cases_happy_a import CodingCase, cmd, edit
from lib import V, plan_call, post, read, run_check, steps, task, write, ls

LOG_LINES = 2500
SCRATCH = "scratch"
MANY = 1005  # over LIST_MAX_ENTRIES (1000)
EDIT_MAX = 1 << 20  # EDIT_FILE_MAX_BYTES
RUN_ARGS_MAX = 256  # RUN_COMMAND_MAX_ARGS
POST_MAX = 8000  # POST_TEXT_MAX_CHARS
NOISE_BYTES = 6000  # over CHECK_OUTPUT_MAX_BYTES (4096)


def log_text():
    return "".join(f"2026-12-07T02:{i // 60 % 60:02d}:{i % 60:02d}Z {'ERROR' if i % 500 == 7 else 'INFO'} worker tick {i}\n"
                   for i in range(1, LOG_LINES + 1))


def tool_bounds():
    c = CodingCase("edge-tool-bounds", "edge",
                   "Every tool bound meets the model as an error or a cut it reads, with nothing changed; a check's long output is kept to its tail",
                   ["GOAL_MET", "tool-inputs-bounded", "check-output-bounded", "coding-tools", "run_command"],
                   "Count the ERROR lines in logs/app.log and write the count to docs/triage.md as `errors: N`.")
    c.comment = f"""Each bound answers the model, and the next request shows the answer:
read_file with a range of {LOG_LINES} lines returns 2000 and names the start_line to continue with; list_files on a
directory of {MANY} entries shows 1000 and counts the rest; edit_file on a file one byte over 1 MiB is refused and the
file is left alone; run_command with {RUN_ARGS_MAX + 1} arguments runs nothing; post_message with {POST_MAX + 1} characters
posts nothing (outbox_total = 0); the check `noisy` prints a head marker, {NOISE_BYTES} bytes, a tail marker and fails: only
its last 4096 bytes reach the model (the tail marker is in the next request, the head marker in none)."""
    c.ws("logs/app.log", log_text())
    c.ws("docs/README.md", "Triage notes for the overnight runs.\n")
    c.check_cmd("triaged", ["grep", "-qx", "errors: 5", "docs/triage.md"])
    c.check_cmd("noisy", ["sh", "-c", f"echo HEAD-OF-NOISE; head -c {NOISE_BYTES} /dev/zero | tr '\\0' x; echo; echo TAIL-OF-NOISE; exit 1"])
    c.predicate = ("check", "triaged")
    c.tools = ["read_file", "write_file", "list_files", "edit_file", "post_message", "run_check", "run_command"]
    c.run_command = (["sh", "true"], 30)
    c.loop = {"loop_cap": 12}  # ten tool calls and the final answer in one attempt
    make = (f"mkdir -p {SCRATCH}/many && cd {SCRATCH}/many && for i in $(seq 1 {MANY}); do : > f$i; done"
            f" && head -c {EDIT_MAX + 1} /dev/zero | tr '\\0' a > ../big.txt")
    c.run([
        plan_call([task("t1", "Count the ERROR lines of logs/app.log into docs/triage.md", V.check("triaged"))]),
        *steps("t1", [("read_file", {"path": "logs/app.log", "start_line": 1, "end_line": LOG_LINES + 100}),
                      cmd("sh", "-c", make),
                      ls(f"{SCRATCH}/many"),
                      edit(f"{SCRATCH}/big.txt", "a", "b"),
                      cmd("true", *(["x"] * RUN_ARGS_MAX)),
                      post("#ops", "E" * (POST_MAX + 1), "triage-long"),
                      run_check("noisy"),
                      cmd("sh", "-c", f"rm -rf {SCRATCH}"),
                      write("docs/triage.md", "errors: 5\n")],
               "docs/triage.md says errors: 5 (lines 7, 507, 1007, 1507 and 2007)."),
    ])
    key = lambda n: f"execute/t1/a0/{n}"
    c.expect = {"ending": "GOAL_MET", "predicate_met": True, "verified": ["t1"], "outbox_total": 0,
                "files_absent": [SCRATCH],
                "request_contains_in_order": [
                    {"call_key": key(1), "strings": [f"[lines 1-2000 of {LOG_LINES} in logs/app.log; at most 2000 lines per call, continue with start_line 2001]"]},
                    {"call_key": key(3), "strings": [f"... and {MANY - 1000} more entries not shown"]},
                    {"call_key": key(4), "strings": [f"is {EDIT_MAX + 1} bytes, over the {EDIT_MAX}-byte edit limit"]},
                    {"call_key": key(5), "strings": [f"run_command: {RUN_ARGS_MAX + 1} arguments, over the limit of {RUN_ARGS_MAX}; nothing was run"]},
                    {"call_key": key(6), "strings": [f"is over {POST_MAX} characters"]},
                    {"call_key": key(7), "strings": ["check noisy:", "TAIL-OF-NOISE"]}],
                "request_excludes": [{"call_key": "execute/t1/*", "strings": ["HEAD-OF-NOISE"]}]}
    return c


def cases():
    return [tool_bounds()]
