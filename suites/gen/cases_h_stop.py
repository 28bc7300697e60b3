"""Cases for what a person does next to a run (issue 47): run the same command
again after it ended, raise the wrong limit, resume under another goal, start a
second harness beside a running one, stop it with SIGTERM while a check runs or
with SIGHUP (a closed terminal) while the goal predicate runs. The next
commands are `[[step]]`s (bench/src/steps.rs), each a gate of its own; the
stops are `[interrupt]`s with the signal and what the stop report must say.
Each promise here has a broken variant (harness/src/mutants.rs) the case
fails."""

from lib import V, call, plan_call, read, steps, task, write, Case

NOTES = """# 2.4.0
- Exports: CSV exports stream instead of buffering (fixes timeouts over 50k rows).
- Auth: session cookies are SameSite=Lax.
"""

GOAL = "Write the 2.4.0 release notes to RELEASE.md."

# Exit codes of `harness run` (harness/src/ending.rs).
EXIT_QUEUE_EMPTY = 3
EXIT_UNRECOVERABLE = 4
EXIT_SPEC_REJECTED = 64


def notes_case(cid, title, covers):
    c = Case(cid, "edge", title, covers, GOAL)
    c.tools = ["read_file", "write_file", "list_files"]
    c.ws("RELEASE.md", "# Unreleased\n")
    c.ws("CHANGES.txt", "exports: stream CSV (was buffered; timed out over 50k rows)\nauth: SameSite=Lax session cookies\n")
    return c


def notes_calls():
    tasks = [task("t1", "Write the 2.4.0 release notes into RELEASE.md", V.check("notes"))]
    return [
        plan_call(tasks),
        *steps("t1", [read("CHANGES.txt"), write("RELEASE.md", NOTES)], "RELEASE.md holds the 2.4.0 notes."),
    ]


def finished_run_next_commands():
    c = notes_case("edge-finished-run-next-commands",
                   "A run ended QUEUE_EMPTY_GOAL_UNMET: the same command re-reports it; a raise of either limit, a changed goal, state inside the workspace are refused",
                   ["QUEUE_EMPTY_GOAL_UNMET", "rereport", "raise-refused", "goal-mismatch", "state-outside-workspace",
                    "finished-run-not-rerun", "raise-only-after-its-ending", "resume-refuses-other-goal", "harness-state-outside-workspace"])
    c.check_cmd("notes", ["grep", "-q", "^# 2.4.0$", "RELEASE.md"])
    # The goal also wants a sign-off no task can give: the queue runs dry unmet.
    c.check_cmd("signed", ["grep", "-q", "^Signed-off-by: release-captain", "RELEASE.md"])
    c.predicate = ("check", "signed")
    c.run([
        *notes_calls(),
        plan_call([], key="replan/0", prose="The notes are written; the sign-off is the release captain's, not mine to add. No further tasks: {PLAN}"),
    ])
    c.expect = {"ending": "QUEUE_EMPTY_GOAL_UNMET", "predicate_met": False, "verified": ["t1"]}
    c.steps = [
        # The same command on the ended run: re-reported, nothing run.
        {"when": "after", "exit": EXIT_QUEUE_EMPTY, "output_contains": ["QUEUE_EMPTY_GOAL_UNMET"],
         "no_new_events": ["resume", "start"]},
        # A raise is only for the ending it raises.
        {"when": "after", "args": ["--raise-cap-usd", "50"], "exit": EXIT_SPEC_REJECTED,
         "output_contains": ["not raised", "--raise-cap-usd"], "no_new_events": ["resume", "start", "limit_raised"]},
        {"when": "after", "args": ["--raise-wall-clock-s", "90000"], "exit": EXIT_SPEC_REJECTED,
         "output_contains": ["not raised", "--raise-wall-clock-s"], "no_new_events": ["resume", "start", "limit_raised"]},
        # Harness state inside the workspace: the outbox, the state dir.
        {"when": "after", "spec": {"outbox": "workspace/posted.jsonl"}, "state_dir": "state-outbox",
         "exit": EXIT_SPEC_REJECTED, "output_contains": ["spec rejected", "outbox"]},
        {"when": "after", "state_dir": "case/workspace/.harness-state",
         "exit": EXIT_SPEC_REJECTED, "output_contains": ["spec rejected", "state_dir"]},
        # Last (its refusal writes its own report): the checkpoint is for
        # another goal.
        {"when": "after", "spec": {"goal": "Write the 2.5.0 release notes to RELEASE.md."},
         "exit": EXIT_UNRECOVERABLE, "output_contains": ["goal"], "no_new_events": ["resume", "start"]},
    ]
    c.comment = """The run ends QUEUE_EMPTY_GOAL_UNMET (t1 verified, the sign-off the predicate wants is no task's to give). Then the
steps, each a gate (bench/src/steps.rs), on the same state dir unless named: the same command re-reports the ending
(exit 3, no resume or start event added); --raise-cap-usd and --raise-wall-clock-s are refused (exit 64: the run
ended neither BUDGET_EXHAUSTED nor TIME_LIMIT); a spec whose outbox lies in the workspace, and a state dir inside
the workspace, are refused before anything runs; and, last, a spec with another goal is refused to resume
(UNRECOVERABLE_ERROR, the checkpoint's goal named). Variants caught: reruns-unmet-endings, raise-after-any-ending,
outbox-in-workspace, goal-mismatch-accepted."""
    return c


def stop_mid_verify_second_harness():
    c = notes_case("edge-stop-mid-verify-second-harness",
                   "SIGTERM while t1's verify check runs: the check is cut, the stop report names t1; a second harness beside the paused one is refused",
                   ["GOAL_MET", "sigterm", "resume", "stop-report", "lock",
                    "stop-report-names-in-flight", "one-harness-per-workspace", "stop-is-not-an-ending"])
    c.latency_cap_ms = 40000
    # A verify that takes a while: the stop lands while it runs.
    c.check_cmd("notes", ["sh", "-c", "sleep 3; grep -q '^# 2.4.0$' RELEASE.md"])
    c.check_cmd("done", ["grep", "-q", "^# 2.4.0$", "RELEASE.md"])
    c.predicate = ("check", "done")
    c.run(notes_calls())
    # Checks of the first process: the predicate, t1's admission verify,
    # the predicate of the next lap... the 3rd is t1's verify after its write.
    c.interrupt = "during_check:3"
    c.interrupt_signal = "SIGTERM"
    c.stop_report = {"in_flight_task": "t1", "cut_contains": "the verify of task t1"}
    c.steps = [
        # The same command while the run is going: refused, the holder named.
        {"when": "paused", "exit": EXIT_SPEC_REJECTED,
         "output_contains": ["already running this run", "pid"]},
        # The same workspace with another state dir: refused too.
        {"when": "paused", "state_dir": "state-2", "exit": EXIT_SPEC_REJECTED,
         "output_contains": ["another harness", "state dir other than"]},
    ]
    c.expect = {"ending": "GOAL_MET", "predicate_met": True, "verified": ["t1"], "report": {"resumes": 1},
                "files_contain": {"RELEASE.md": "# 2.4.0"}}
    c.comment = """The harness is paused while t1's verify (a check that sleeps 3 s) runs, its write done. Beside it two more harnesses
are started (steps, while it is paused): the same command (its state dir is held: refused, naming the pid) and one
on another state dir (the workspace is held: refused). Then SIGTERM: the check is killed whole, the run suspends
(exit 143) and its stop report names t1 in flight and the verify it cut. The same command resumes: t1 is verified,
the goal met. Variants caught: check-not-cut-by-stop, stop-report-no-in-flight, no-workspace-lock."""
    return c


def sighup_mid_predicate():
    c = notes_case("edge-sighup-mid-predicate",
                   "SIGHUP (a closed terminal) while the goal predicate runs: a stop request like SIGTERM (exit 129), the cut named; the same command resumes to GOAL_MET",
                   ["GOAL_MET", "sighup", "resume", "stop-report", "sighup-is-a-stop", "stop-report-names-in-flight", "stop-is-not-an-ending"])
    c.latency_cap_ms = 30000
    c.check_cmd("notes", ["grep", "-q", "^# 2.4.0$", "RELEASE.md"])
    c.check_cmd("done", ["sh", "-c", "sleep 2; grep -q '^# 2.4.0$' RELEASE.md"])
    c.predicate = ("check", "done")
    c.run(notes_calls())
    # The first check of the process is the goal predicate, before any call.
    c.interrupt = "during_check:1"
    c.interrupt_signal = "SIGHUP"
    c.stop_report = {"cut_contains": "the goal predicate"}
    c.expect = {"ending": "GOAL_MET", "predicate_met": True, "verified": ["t1"], "report": {"resumes": 1}}
    c.comment = """SIGHUP lands while the goal predicate (a check that sleeps 2 s) runs, before any model call. SIGHUP is a stop
request like SIGTERM and SIGINT: the predicate is killed whole, the run suspends (exit 129) and its stop report says
it cut the goal predicate. The same command resumes and meets the goal. Variant caught: hup-not-a-stop (the harness
dies of the signal, no stop report)."""
    return c


def cases():
    return [finished_run_next_commands(), stop_mid_verify_second_harness(), sighup_mid_predicate()]
