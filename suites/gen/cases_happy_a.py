"""Happy cases, second batch (issue 35 item 7): everyday overnight chores an
autonomous coding/ops agent is handed, each with its own workspace and a
check outside it that fails until the work is really done. They vary the
shape: 1-3 tasks, the coding tools (search, edit_file, run_command), every
file verify kind and checks in sh, awk and python3."""

from lib import Case, V, plan_call, read, run_check, steps, task, write, ls

CODING = ["read_file", "list_files", "search", "edit_file", "run_check"]


class CodingCase(Case):
    """A case whose spec may allow run_command: `run_command` is
    (programs, timeout_s) and adds the `[tools.run_command]` table the
    harness requires beside the allowlist."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.run_command = None

    def run_toml(self):
        text = super().run_toml()
        if not self.run_command:
            return text
        programs, timeout = self.run_command
        allow = text.index("allow = ")
        end = text.index("\n", allow) + 1
        table = (f"\n# run_command may start {', '.join(programs)} and nothing else, killed after {timeout} s.\n"
                 f"[tools.run_command]\nprograms = {programs!r}\ntimeout_s = {timeout}\n").replace("'", '"')
        return text[:end] + table + text[end:]


def edit(path, old, new):
    return ("edit_file", {"path": path, "old": old, "new": new})


def grep(pattern, path=None):
    inp = {"pattern": pattern}
    if path:
        inp["path"] = path
    return ("search", inp)


def cmd(*argv):
    return ("run_command", {"argv": list(argv)})


UNITTEST = ("python3", "-B", "-m", "unittest", "discover", "-s", "tests", "-q")


# ---------------------------------------------------------------- 1. CLI flags in the README
CLI_PY = '''"""logship: ship application logs to the central collector."""
import argparse
import sys


def build_parser():
    p = argparse.ArgumentParser(prog="logship", description="Ship log files to the collector.")
    p.add_argument("paths", nargs="+", help="log files or directories to ship")
    p.add_argument("--config", default="/etc/logship.toml", help="collector settings (default: %(default)s)")
    p.add_argument("--since", metavar="DURATION", help="only lines newer than this, e.g. 15m or 2h")
    p.add_argument("--follow", action="store_true", help="keep shipping lines as they are appended")
    p.add_argument("--max-batch", type=int, default=500, metavar="N",
                   help="send at most N lines per request (default: %(default)s)")
    p.add_argument("--dry-run", action="store_true",
                   help="parse and batch the lines but send nothing; print what would be sent")
    return p


def main(argv=None):
    args = build_parser().parse_args(argv)
    print(f"would ship {len(args.paths)} path(s)" if args.dry_run else "shipping")
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''

CLI_README = """# logship

Ships application log files to the central collector.

## Usage

```
logship [OPTIONS] PATH...
```

## Options

| flag | meaning |
|---|---|
| `--config FILE` | collector settings (default: `/etc/logship.toml`) |
| `--since DURATION` | only lines newer than this, e.g. `15m` or `2h` |
| `--follow` | keep shipping lines as they are appended |

## Exit codes

0 when every line was accepted, 1 when the collector refused a batch, 2 on bad arguments.
"""

CLI_ROWS = """| `--follow` | keep shipping lines as they are appended |
| `--max-batch N` | send at most N lines per request (default: `500`) |
| `--dry-run` | parse and batch the lines but send nothing; print what would be sent |
"""


def cli_help_readme():
    c = CodingCase("happy-cli-help-readme", "happy", "Every logship --help flag gets a row in the README's Options table",
                   ["GOAL_MET", "docs", "coding-tools", "run_command"],
                   "Document every option of `logship --help` in README.md's Options table: --max-batch and --dry-run were added in 1.6 without docs.")
    c.comment = """The flags are read from the parser itself (build_parser), not from a list the check keeps,
so a flag added later without a README row fails the check too."""
    c.ws("src/logship/__init__.py", "")
    c.ws("src/logship/cli.py", CLI_PY)
    c.ws("README.md", CLI_README)
    c.check_script("readme", "readme.py", r'''#!/usr/bin/env python3
# Every optional flag build_parser() defines has a row `| `--flag ...` | description |`
# in README.md's Options table, with a description of at least three words.
import re, sys
sys.dont_write_bytecode = True  # leave no __pycache__ in the workspace
sys.path.insert(0, "src")
from logship.cli import build_parser
readme = open("README.md").read()
section = readme.split("## Options", 1)[1].split("\n## ", 1)[0] if "## Options" in readme else ""
rows = {}
for line in section.splitlines():
    m = re.match(r"\|\s*`(--[a-z-]+)[^`]*`\s*\|(.*)\|\s*$", line)
    if m:
        rows[m.group(1)] = m.group(2).strip()
bad = []
for action in build_parser()._actions:
    for flag in action.option_strings:
        if not flag.startswith("--") or flag == "--help":
            continue
        if flag not in rows:
            bad.append(f"{flag}: no row in the Options table")
        elif len(rows[flag].split()) < 3:
            bad.append(f"{flag}: description too short: {rows[flag]!r}")
print("\n".join(bad) or "every flag documented")
sys.exit(1 if bad else 0)
''')
    c.predicate = ("check", "readme")
    c.tools = CODING + ["run_command"]
    c.run_command = (["python3"], 30)
    c.run([
        plan_call([task("t1", "Add README Options rows for --max-batch and --dry-run, worded as in the parser's help", V.check("readme"))]),
        *steps("t1", [cmd("python3", "-B", "src/logship/cli.py", "--help"),
                      grep(r"^\| `--", "README.md"),
                      edit("README.md", "| `--follow` | keep shipping lines as they are appended |\n", CLI_ROWS),
                      run_check("readme")],
               "Added rows for --max-batch N (default 500) and --dry-run; the readme check passes."),
    ])
    c.expect = {"ending": "GOAL_MET", "predicate_met": True, "verified": ["t1"],
                "files_contain": {"README.md": "| `--dry-run` |"},
                "request_contains_in_order": [
                    {"call_key": "execute/t1/a0/1", "strings": ["passed; exit code: 0", "--dry-run"]},
                    {"call_key": "execute/t1/a0/4", "strings": ["check readme: passed"]}]}
    return c


# ---------------------------------------------------------------- 2. a deprecated config key, renamed in every env
def yaml_env(env, host, db, extra):
    return f"""# {env} settings for the sessions service
service: sessions
log_level: {extra}
cache:
  redis_url: redis://{host}:6379/{db}
  pool_size: 16
  ttl_s: 1800
http:
  port: 8080
"""


ENVS = {"dev": ("localhost", 0, "debug"), "staging": ("cache-stg.internal", 2, "info"), "prod": ("cache-prod.internal", 1, "warning")}

SETTINGS_PY = '''"""Settings loader for the sessions service."""
import warnings

RENAMED = {("cache", "redis_url"): ("cache", "endpoint")}  # since 3.2; the old key goes away in 4.0


def migrate(raw):
    for (sec, old), (_, new) in RENAMED.items():
        if old in raw.get(sec, {}):
            warnings.warn(f"{sec}.{old} is deprecated; use {sec}.{new}", DeprecationWarning)
            raw[sec].setdefault(new, raw[sec].pop(old))
    return raw
'''


def rotate_config_key():
    c = CodingCase("happy-rotate-yaml-config-key", "happy", "The deprecated cache.redis_url key is renamed to cache.endpoint in all three env files",
                   ["GOAL_MET", "config-change", "coding-tools"],
                   "The sessions service warns that cache.redis_url is deprecated (removed in 4.0): rename it to cache.endpoint in every config/*.yaml, keeping each environment's value.")
    for env, (host, db, lvl) in ENVS.items():
        c.ws(f"config/{env}.yaml", yaml_env(env, host, db, lvl))
    c.ws("src/sessions/settings.py", SETTINGS_PY)
    c.check_script("config", "config.py", r'''#!/usr/bin/env python3
# No config file still uses cache.redis_url; each has cache.endpoint with the
# value that env had (pinned here, outside the workspace), and every other line
# of the file is unchanged.
import glob, sys
WANT = {"dev": "redis://localhost:6379/0", "staging": "redis://cache-stg.internal:6379/2",
        "prod": "redis://cache-prod.internal:6379/1"}
LEVEL = {"dev": "debug", "staging": "info", "prod": "warning"}
bad = []
files = sorted(glob.glob("config/*.yaml"))
if len(files) != 3:
    bad.append(f"want 3 config files, found {files}")
for env, url in WANT.items():
    try:
        lines = open(f"config/{env}.yaml").read().splitlines()
    except OSError as e:
        bad.append(f"{env}: {e}")
        continue
    if any("redis_url" in l for l in lines):
        bad.append(f"{env}: still uses redis_url")
    cache = lines.index("cache:") if "cache:" in lines else -1
    block = []
    for l in lines[cache + 1:]:
        if not l.startswith("  "):
            break
        block.append(l.strip())
    if f"endpoint: {url}" not in block:
        bad.append(f"{env}: cache.endpoint is not {url}")
    others = [f"# {env} settings for the sessions service", "service: sessions", f"log_level: {LEVEL[env]}",
              "cache:", "  pool_size: 16", "  ttl_s: 1800", "http:", "  port: 8080"]
    if [l for l in lines if l != f"  endpoint: {url}"] != others:
        bad.append(f"{env}: lines other than the renamed key changed")
print("\n".join(bad) or "config renamed")
sys.exit(1 if bad else 0)
''')
    c.predicate = ("check", "config")
    c.tools = CODING
    tasks = [task(f"t{i}", f"Rename cache.redis_url to cache.endpoint in config/{env}.yaml, same value",
                  V.contains(f"config/{env}.yaml", f"  endpoint: redis://{host}:6379/{db}"))
             for i, (env, (host, db, _)) in enumerate(ENVS.items(), 1)]
    calls = [plan_call(tasks)]
    for i, (env, (host, db, _)) in enumerate(ENVS.items(), 1):
        acts = [grep("redis_url", "config")] if i == 1 else []
        acts.append(edit(f"config/{env}.yaml", f"  redis_url: redis://{host}:{6379}/{db}\n", f"  endpoint: redis://{host}:6379/{db}\n"))
        calls += steps(f"t{i}", acts, f"config/{env}.yaml now uses cache.endpoint.")
    c.run(calls)
    c.expect = {"ending": "GOAL_MET", "predicate_met": True, "verified": ["t1", "t2", "t3"], "parked": [],
                "files_contain": {"config/prod.yaml": "  endpoint: redis://cache-prod.internal:6379/1"},
                "request_contains_in_order": [
                    {"call_key": "execute/t1/a0/1", "strings": ["config/dev.yaml:5:", "config/prod.yaml:5:", "config/staging.yaml:5:"]}]}
    return c


# ---------------------------------------------------------------- 3. a Dockerfile HEALTHCHECK
DOCKERFILE = """FROM python:3.12-slim
WORKDIR /srv
COPY requirements.txt .
RUN pip install --no-cache-dir -r requirements.txt
COPY app/ app/
USER 10001
EXPOSE 8081
CMD ["gunicorn", "--bind", "0.0.0.0:8081", "--workers", "4", "app.main:app"]
"""

HEALTH_PY = '''from app.main import app, db


@app.get("/livez")
def livez():
    """The process is up and serving: what a container HEALTHCHECK should probe."""
    return {"ok": True}


@app.get("/readyz")
def readyz():
    """Ready for traffic: checks the database, so it fails during a DB blip (not for restarts)."""
    db.execute("SELECT 1")
    return {"ok": True}
'''

HEALTHCHECK = ('HEALTHCHECK --interval=30s --timeout=3s --start-period=20s --retries=3 \\\n'
               '  CMD python -c "import urllib.request; urllib.request.urlopen(\'http://127.0.0.1:8081/livez\', timeout=2)" || exit 1\n')


def dockerfile_healthcheck():
    c = CodingCase("happy-dockerfile-healthcheck", "happy", "The API image gets a HEALTHCHECK on /livez that works without curl in a slim image",
                   ["GOAL_MET", "container", "coding-tools"],
                   "Give the api image a Docker HEALTHCHECK so the orchestrator restarts a hung container: probe the liveness route on the port the app serves, with an interval and a timeout.")
    c.ws("Dockerfile", DOCKERFILE)
    c.ws("requirements.txt", "flask==3.0.3\ngunicorn==22.0.0\n")
    c.ws("app/main.py", 'from flask import Flask\n\napp = Flask(__name__)\ndb = None  # set up in app.db\n')
    c.ws("app/health.py", HEALTH_PY)
    c.check_script("healthcheck", "healthcheck.sh", r'''#!/bin/sh
# One HEALTHCHECK, before CMD, with an interval and a timeout, probing /livez
# (not /readyz: a DB blip must not restart the container) on the EXPOSEd port;
# curl and wget are not in python:3.12-slim, so they must be installed if used.
f=Dockerfile
n=$(grep -c '^HEALTHCHECK' "$f")
[ "$n" = 1 ] || { echo "want exactly one HEALTHCHECK, found $n"; exit 1; }
hc=$(awk '/^HEALTHCHECK/{on=1} on{print; if ($0 !~ /\\$/) exit}' "$f")
hc_line=$(grep -n '^HEALTHCHECK' "$f" | cut -d: -f1)
cmd_line=$(grep -n '^CMD' "$f" | cut -d: -f1)
[ "$hc_line" -lt "$cmd_line" ] || { echo "HEALTHCHECK must come before CMD"; exit 1; }
port=$(awk '/^EXPOSE/{print $2}' "$f")
echo "$hc" | grep -q -- '--interval=' || { echo "no --interval"; exit 1; }
echo "$hc" | grep -q -- '--timeout=' || { echo "no --timeout"; exit 1; }
echo "$hc" | grep -q ":$port/livez" || { echo "must probe :$port/livez"; exit 1; }
for tool in curl wget; do
  if echo "$hc" | grep -qw "$tool" && ! grep -q "apt-get install.*$tool" "$f"; then
    echo "$tool is not in python:3.12-slim"; exit 1
  fi
done
echo "healthcheck ok"
''', timeout=30)
    c.predicate = ("check", "healthcheck")
    c.tools = CODING
    c.run([
        plan_call([task("t1", "Add a HEALTHCHECK on /livez (port 8081) to the Dockerfile using python's urllib, since the slim image has no curl",
                        V.check("healthcheck"))]),
        *steps("t1", [grep(r'@app\.get\("/(livez|readyz|healthz)"', "app"),
                      read("Dockerfile"),
                      edit("Dockerfile", "EXPOSE 8081\n", "EXPOSE 8081\n" + HEALTHCHECK),
                      run_check("healthcheck")],
               "HEALTHCHECK probes http://127.0.0.1:8081/livez every 30s with python's urllib (no curl in slim); /readyz left out so a DB blip does not restart the container."),
    ])
    c.expect = {"ending": "GOAL_MET", "predicate_met": True, "verified": ["t1"],
                "files_contain": {"Dockerfile": "8081/livez"}}
    return c


# ---------------------------------------------------------------- 4. an index migration, up and down
SLOW_MD = """# Slow queries, week 48

## 1. Tenant events timeline (p95 2.4 s, 31k calls/day)

```sql
SELECT id, kind, payload, created_at FROM events
WHERE tenant_id = $1 AND created_at >= $2
ORDER BY created_at DESC LIMIT 100;
```

EXPLAIN: Seq Scan on events (rows=48M). No index covers (tenant_id, created_at).
Fix: a composite index (tenant_id, created_at DESC), built CONCURRENTLY (events takes writes all day).
"""

MIG_README = """# Migrations

Files are `NNNN_name.up.sql` and `NNNN_name.down.sql`, applied in number order by dbmate.
A migration that uses CONCURRENTLY cannot run in a transaction: its files must start
with the line `-- migrate:no-transaction`.
"""


def index_migration():
    c = Case("happy-events-index-up-down", "happy", "Migration 0032 adds the tenant timeline index, up and down, without a transaction",
             ["GOAL_MET", "migration", "schema"],
             "Fix slow query 1 in docs/slow-queries.md with a new migration 0032 that adds the missing index, as an up and a down file like the existing migrations.")
    c.ws("docs/slow-queries.md", SLOW_MD)
    c.ws("db/migrations/README.md", MIG_README)
    c.ws("db/migrations/0030_create_events.up.sql", "CREATE TABLE events (\n  id bigserial PRIMARY KEY,\n  kind text NOT NULL,\n  payload jsonb NOT NULL,\n  created_at timestamptz NOT NULL DEFAULT now()\n);\n")
    c.ws("db/migrations/0030_create_events.down.sql", "DROP TABLE events;\n")
    c.ws("db/migrations/0031_events_tenant_id.up.sql", "-- migrate:no-transaction\nALTER TABLE events ADD COLUMN tenant_id bigint;\nCREATE INDEX CONCURRENTLY IF NOT EXISTS events_kind_idx ON events (kind);\n")
    c.ws("db/migrations/0031_events_tenant_id.down.sql", "-- migrate:no-transaction\nDROP INDEX CONCURRENTLY IF EXISTS events_kind_idx;\nALTER TABLE events DROP COLUMN tenant_id;\n")
    c.check_script("migration", "migration.py", r'''#!/usr/bin/env python3
# Exactly one 0032 migration, with an up and a down file; the up creates an
# index on events (tenant_id, created_at ...) concurrently, the down drops the
# same index by name, and both are marked no-transaction.
import glob, re, sys
ups = glob.glob("db/migrations/0032_*.up.sql")
if len(ups) != 1:
    sys.exit(f"want one 0032_*.up.sql, found {ups}")
down = ups[0][: -len(".up.sql")] + ".down.sql"
try:
    up_sql, down_sql = open(ups[0]).read(), open(down).read()
except OSError as e:
    sys.exit(f"missing file: {e}")
bad = []
m = re.search(r"CREATE INDEX CONCURRENTLY (?:IF NOT EXISTS )?(\w+)\s+ON events\s*(?:USING btree\s*)?\(\s*tenant_id\s*,\s*created_at\b", up_sql, re.I)
if not m:
    bad.append("up: no CREATE INDEX CONCURRENTLY ... ON events (tenant_id, created_at ...)")
elif not re.search(rf"DROP INDEX CONCURRENTLY (?:IF EXISTS )?{m.group(1)}\s*;", down_sql, re.I):
    bad.append(f"down: does not drop index {m.group(1)} concurrently")
for name, sql in ((ups[0], up_sql), (down, down_sql)):
    if sql.splitlines()[:1] != ["-- migrate:no-transaction"]:
        bad.append(f"{name}: CONCURRENTLY needs '-- migrate:no-transaction' as its first line")
print("\n".join(bad) or "0032 ok")
sys.exit(1 if bad else 0)
''')
    c.predicate = ("check", "migration")
    up = "db/migrations/0032_events_tenant_created_idx.up.sql"
    down = "db/migrations/0032_events_tenant_created_idx.down.sql"
    c.run([
        plan_call([task("t1", "Write the up migration 0032_events_tenant_created_idx: CREATE INDEX CONCURRENTLY on events (tenant_id, created_at DESC)", V.exists(up)),
                   task("t2", "Write its down migration dropping the index concurrently", V.check("migration"))]),
        *steps("t1", [ls("db/migrations"), read("db/migrations/README.md"),
                      write(up, "-- migrate:no-transaction\n-- Slow query 1 (tenant events timeline): seq scan on 48M rows.\nCREATE INDEX CONCURRENTLY IF NOT EXISTS events_tenant_created_idx\n  ON events (tenant_id, created_at DESC);\n")],
               "Up migration written, outside a transaction as dbmate needs for CONCURRENTLY."),
        *steps("t2", [write(down, "-- migrate:no-transaction\nDROP INDEX CONCURRENTLY IF EXISTS events_tenant_created_idx;\n")],
               "Down migration drops events_tenant_created_idx."),
    ])
    c.expect = {"ending": "GOAL_MET", "predicate_met": True, "verified": ["t1", "t2"], "verified_count": 2,
                "files_contain": {down: "DROP INDEX CONCURRENTLY IF EXISTS events_tenant_created_idx"}}
    return c


# ---------------------------------------------------------------- 5. a backup script's paths become variables
BACKUP_SH = """#!/bin/sh
# Nightly backup of the ledger's data directory (cron: 02:15 on db-1).
set -eu
stamp=$(date +%Y%m%d-%H%M%S)
mkdir -p /var/backups/ledger
tar -czf "/var/backups/ledger/ledger-$stamp.tar.gz" -C /var/lib/ledger/data .
echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) wrote ledger-$stamp.tar.gz" >> /var/log/ledger-backup.log
find /var/backups/ledger -name 'ledger-*.tar.gz' -mtime +14 -exec rm -f {} +
"""

BACKUP_SH_VARS = """#!/bin/sh
# Nightly backup of the ledger's data directory (cron: 02:15 on db-1).
# Every path can be overridden from the environment (staging runs it with its own);
# the defaults are production's.
set -eu
LEDGER_DATA_DIR="${LEDGER_DATA_DIR:-/var/lib/ledger/data}"
BACKUP_DIR="${BACKUP_DIR:-/var/backups/ledger}"
BACKUP_LOG="${BACKUP_LOG:-/var/log/ledger-backup.log}"

stamp=$(date +%Y%m%d-%H%M%S)
mkdir -p "$BACKUP_DIR"
tar -czf "$BACKUP_DIR/ledger-$stamp.tar.gz" -C "$LEDGER_DATA_DIR" .
echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) wrote ledger-$stamp.tar.gz" >> "$BACKUP_LOG"
find "$BACKUP_DIR" -name 'ledger-*.tar.gz' -mtime +14 -exec rm -f {} +
"""


def backup_script_vars():
    c = CodingCase("happy-backup-script-path-vars", "happy", "The ledger backup script's hard-coded paths become environment variables with production defaults",
                   ["GOAL_MET", "ops-script", "run_command"],
                   "Staging cannot run scripts/backup.sh because its paths are hard-coded: make the data dir, the backup dir and the log file variables (LEDGER_DATA_DIR, BACKUP_DIR, BACKUP_LOG) that the environment can override, with today's paths as defaults.")
    c.ws("scripts/backup.sh", BACKUP_SH)
    c.ws("ops/cron.d/ledger-backup", "15 2 * * * postgres /opt/ledger/scripts/backup.sh\n")
    c.check_script("backup", "backup.sh", r'''#!/bin/sh
# Run the script for real with every path under the check's TMPDIR: it must
# archive the data dir there and log there (the sandbox refuses writes to /var,
# so a path still hard-coded fails the run). Production's defaults must stay.
s=scripts/backup.sh
sh -n "$s" || exit 1
for kv in LEDGER_DATA_DIR=/var/lib/ledger/data BACKUP_DIR=/var/backups/ledger BACKUP_LOG=/var/log/ledger-backup.log; do
  var=${kv%%=*}; def=${kv#*=}
  grep -Eq "^$var=\"\\\$\{$var:-$def\}\"|^: \"\\\$\{$var:=$def\}\"" "$s" || { echo "$var must default to $def"; exit 1; }
done
left=$(grep -v '^[A-Z_]*="\${' "$s" | grep -v '^#' | grep -v '^: "\${' | grep -c '/var/')
[ "$left" = 0 ] || { echo "$left line(s) still hard-code /var paths"; exit 1; }
root=$(mktemp -d)
mkdir -p "$root/data" && echo "balances" > "$root/data/ledger.db"
LEDGER_DATA_DIR="$root/data" BACKUP_DIR="$root/backups" BACKUP_LOG="$root/backup.log" sh "$s" || { echo "script failed"; exit 1; }
tarball=$(ls "$root"/backups/ledger-*.tar.gz 2>/dev/null | head -n 1)
[ -n "$tarball" ] || { echo "no archive in BACKUP_DIR"; exit 1; }
tar -tzf "$tarball" | grep -q 'ledger.db' || { echo "archive lacks the data"; exit 1; }
grep -q "wrote ledger-" "$root/backup.log" || { echo "nothing logged to BACKUP_LOG"; exit 1; }
echo "backup script configurable"
''', timeout=30)
    c.predicate = ("check", "backup")
    c.tools = ["read_file", "write_file", "list_files", "run_check", "run_command"]
    c.run_command = (["sh"], 30)
    c.run([
        plan_call([task("t1", "Rewrite scripts/backup.sh with LEDGER_DATA_DIR, BACKUP_DIR, BACKUP_LOG defaulting to the current paths", V.check("backup"))]),
        *steps("t1", [read("scripts/backup.sh"), write("scripts/backup.sh", BACKUP_SH_VARS),
                      cmd("sh", "-n", "scripts/backup.sh"), run_check("backup")],
               "The three paths are variables with production's values as defaults; staging sets them in its environment."),
    ])
    c.expect = {"ending": "GOAL_MET", "predicate_met": True, "verified": ["t1"],
                "files_contain": {"scripts/backup.sh": 'BACKUP_DIR="${BACKUP_DIR:-/var/backups/ledger}"'},
                "request_contains_in_order": [
                    {"call_key": "execute/t1/a0/3", "strings": ["command `sh -n scripts/backup.sh`: passed"]},
                    {"call_key": "execute/t1/a0/4", "strings": ["check backup: passed", "backup script configurable"]}]}
    return c


# ---------------------------------------------------------------- 6. broken links in the docs
DOCS = {
    "docs/index.md": "# Beacon docs\n\n- [Install](guide/install.md)\n- [Upgrade](guide/upgrade.md)\n- [Configuration reference](reference/configuration.md)\n",
    "docs/guide/install.md": "# Installing Beacon\n\n## System requirements\n\nLinux x86_64 or arm64, 2 GB RAM.\n\n## Install\n\n"
                             "Unpack the release and start `beacon serve`. Request timeouts are set in the\n"
                             "[configuration reference](../reference/config.md#timeouts).\n",
    "docs/guide/upgrade.md": "# Upgrading\n\nCheck the [requirements](install.md#requirements) first: 2.0 needs 2 GB RAM.\n\n"
                             "Old events are purged by the [retention settings](../reference/config.md#retention); back up first.\n",
    "docs/reference/configuration.md": "# Configuration reference\n\n(Renamed from config.md in 2.0.)\n\n## Timeouts\n\n`request_timeout_ms`, default 10000.\n\n## Retention\n\n`retention_days`, default 30.\n",
}


def docs_broken_links():
    c = Case("happy-docs-broken-links", "happy", "The docs' relative links and anchors all resolve after config.md became configuration.md",
             ["GOAL_MET", "docs", "coding-tools"],
             "The docs have broken links since reference/config.md was renamed to configuration.md: make every relative link and #anchor under docs/ resolve.")
    for p, t in DOCS.items():
        c.ws(p, t)
    c.check_script("links", "links.py", r'''#!/usr/bin/env python3
# Every relative markdown link under docs/ names an existing file, and its
# #anchor (if any) a heading of that file (GitHub's slugs).
import glob, os, re, sys

def slugs(path):
    out = set()
    for line in open(path):
        m = re.match(r"#+\s+(.*)", line)
        if m:
            out.add(re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-"))
    return out

bad = []
files = sorted(glob.glob("docs/**/*.md", recursive=True))
for md in files:
    for target in re.findall(r"\]\(([^)\s]+)\)", open(md).read()):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        dest = os.path.normpath(os.path.join(os.path.dirname(md), path)) if path else md
        if not os.path.isfile(dest):
            bad.append(f"{md}: {target}: no file {dest}")
        elif anchor and anchor not in slugs(dest):
            bad.append(f"{md}: {target}: no heading #{anchor} in {dest}")
if len(files) < 4:
    bad.append(f"docs lost files: {files}")
print("\n".join(bad) or f"{len(files)} files, every link resolves")
sys.exit(1 if bad else 0)
''')
    c.predicate = ("check", "links")
    c.tools = CODING
    c.run([
        plan_call([task("t1", "Point the links to reference/config.md at reference/configuration.md (install and upgrade guides)",
                        V.contains("docs/guide/upgrade.md", "../reference/configuration.md#retention")),
                   task("t2", "Fix the #requirements anchor in the upgrade guide (the heading is 'System requirements')", V.check("links"))]),
        *steps("t1", [grep(r"config\.md", "docs"),
                      edit("docs/guide/install.md", "(../reference/config.md#timeouts)", "(../reference/configuration.md#timeouts)"),
                      edit("docs/guide/upgrade.md", "(../reference/config.md#retention)", "(../reference/configuration.md#retention)")],
               "Both links now point at reference/configuration.md."),
        *steps("t2", [run_check("links"),
                      edit("docs/guide/upgrade.md", "(install.md#requirements)", "(install.md#system-requirements)"),
                      run_check("links")],
               "The anchor is #system-requirements; every link under docs/ resolves."),
    ])
    c.expect = {"ending": "GOAL_MET", "predicate_met": True, "verified": ["t1", "t2"],
                "files_contain": {"docs/guide/install.md": "(../reference/configuration.md#timeouts)",
                                  "docs/guide/upgrade.md": "(install.md#system-requirements)"},
                "request_contains_in_order": [
                    {"call_key": "execute/t2/a0/1", "strings": ["check links: FAILED", "no heading #requirements"]},
                    {"call_key": "execute/t2/a0/3", "strings": ["check links: passed", "every link resolves"]}]}
    return c


# ---------------------------------------------------------------- 7. type hints on a module's public functions
BUCKET = '''"""A token bucket for the API gateway's per-client rate limits."""
import re

_RATE = re.compile(r"^(\\d+)/(s|m|h)$")
_SECONDS = {"s": 1.0, "m": 60.0, "h": 3600.0}


def parse_rate(spec):
    """'100/m' -> (100, 60.0): requests per window and the window in seconds."""
    m = _RATE.match(spec.strip())
    if not m:
        raise ValueError(f"bad rate {spec!r}")
    return int(m.group(1)), _SECONDS[m.group(2)]


def refill(tokens, capacity, per_second, elapsed_s):
    """Tokens after `elapsed_s` seconds of refill, never above capacity."""
    return _clamp(tokens + per_second * elapsed_s, 0.0, float(capacity))


def try_acquire(state, now, cost=1):
    """Take `cost` tokens from `state` (a dict: tokens, capacity, per_second, at) if there are enough."""
    state["tokens"] = refill(state["tokens"], state["capacity"], state["per_second"], now - state["at"])
    state["at"] = now
    if state["tokens"] < cost:
        return False
    state["tokens"] -= cost
    return True


def retry_after(state, cost=1):
    """Seconds until `cost` tokens are available, or None if the bucket can never hold that many."""
    if cost > state["capacity"]:
        return None
    missing = max(0.0, cost - state["tokens"])
    return missing / state["per_second"]


def _clamp(x, lo, hi):
    return max(lo, min(hi, x))
'''

BUCKET_TYPED = '''"""A token bucket for the API gateway's per-client rate limits."""
from __future__ import annotations

import re
from typing import TypedDict

_RATE = re.compile(r"^(\\d+)/(s|m|h)$")
_SECONDS = {"s": 1.0, "m": 60.0, "h": 3600.0}


class BucketState(TypedDict):
    tokens: float
    capacity: int
    per_second: float
    at: float


def parse_rate(spec: str) -> tuple[int, float]:
    """'100/m' -> (100, 60.0): requests per window and the window in seconds."""
    m = _RATE.match(spec.strip())
    if not m:
        raise ValueError(f"bad rate {spec!r}")
    return int(m.group(1)), _SECONDS[m.group(2)]


def refill(tokens: float, capacity: int, per_second: float, elapsed_s: float) -> float:
    """Tokens after `elapsed_s` seconds of refill, never above capacity."""
    return _clamp(tokens + per_second * elapsed_s, 0.0, float(capacity))


def try_acquire(state: BucketState, now: float, cost: int = 1) -> bool:
    """Take `cost` tokens from `state` (a dict: tokens, capacity, per_second, at) if there are enough."""
    state["tokens"] = refill(state["tokens"], state["capacity"], state["per_second"], now - state["at"])
    state["at"] = now
    if state["tokens"] < cost:
        return False
    state["tokens"] -= cost
    return True


def retry_after(state: BucketState, cost: int = 1) -> float | None:
    """Seconds until `cost` tokens are available, or None if the bucket can never hold that many."""
    if cost > state["capacity"]:
        return None
    missing = max(0.0, cost - state["tokens"])
    return missing / state["per_second"]


def _clamp(x, lo, hi):
    return max(lo, min(hi, x))
'''

BUCKET_TEST = '''import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
from gateway.bucket import parse_rate, retry_after, try_acquire  # noqa: E402


class Bucket(unittest.TestCase):
    def test_parse_rate(self):
        self.assertEqual(parse_rate("100/m"), (100, 60.0))
        with self.assertRaises(ValueError):
            parse_rate("100 per minute")

    def test_acquire_until_empty_then_refill(self):
        s = {"tokens": 2.0, "capacity": 2, "per_second": 1.0, "at": 0.0}
        self.assertTrue(try_acquire(s, 0.0))
        self.assertTrue(try_acquire(s, 0.0))
        self.assertFalse(try_acquire(s, 0.0))
        self.assertEqual(retry_after(s), 1.0)
        self.assertTrue(try_acquire(s, 1.0))

    def test_never(self):
        self.assertIsNone(retry_after({"tokens": 0.0, "capacity": 2, "per_second": 1.0, "at": 0.0}, cost=3))


if __name__ == "__main__":
    unittest.main()
'''


def type_hints():
    c = CodingCase("happy-type-hints-public-api", "happy", "Every public function of the gateway's token bucket gets parameter and return type hints",
                   ["GOAL_MET", "python-typing", "run_command"],
                   "mypy --strict is coming to the gateway: add type hints to every public function in src/gateway/bucket.py (each parameter and the return), without changing behaviour; the tests must still pass.")
    c.ws("src/gateway/__init__.py", "")
    c.ws("src/gateway/bucket.py", BUCKET)
    c.ws("tests/test_bucket.py", BUCKET_TEST)
    c.check_script("hints", "hints.py", r'''#!/usr/bin/env python3
# Each public top-level function of src/gateway/bucket.py annotates every
# parameter and its return, and the returns say what the functions return
# (pinned here); the module's tests still pass.
import ast, subprocess, sys
RETURNS = {"parse_rate": {"tuple[int, float]", "Tuple[int, float]"},
           "refill": {"float"},
           "try_acquire": {"bool"},
           "retry_after": {"float | None", "Optional[float]", "Union[float, None]"}}
tree = ast.parse(open("src/gateway/bucket.py").read())
funcs = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef) and not f.name.startswith("_")}
bad = []
if set(funcs) != set(RETURNS):
    bad.append(f"public functions changed: {sorted(funcs)}")
for name, f in funcs.items():
    args = f.args.posonlyargs + f.args.args + f.args.kwonlyargs
    bad += [f"{name}: parameter {a.arg} has no type" for a in args if a.annotation is None]
    ret = ast.unparse(f.returns).replace("typing.", "") if f.returns else None
    if ret not in RETURNS.get(name, set()):
        bad.append(f"{name}: return annotation {ret!r}, want one of {sorted(RETURNS.get(name, []))}")
t = subprocess.run([sys.executable, "-B", "-m", "unittest", "discover", "-s", "tests", "-q"], capture_output=True, text=True)
if t.returncode != 0:
    bad.append("tests fail:\n" + t.stderr[-1500:])
print("\n".join(bad) or "public API typed, tests pass")
sys.exit(1 if bad else 0)
''')
    c.predicate = ("check", "hints")
    c.tools = ["read_file", "write_file", "list_files", "run_check", "run_command"]
    c.run_command = (["python3"], 60)
    c.run([
        plan_call([task("t1", "Annotate parse_rate, refill, try_acquire and retry_after in src/gateway/bucket.py (a TypedDict for the state)", V.check("hints"))]),
        *steps("t1", [read("src/gateway/bucket.py"), write("src/gateway/bucket.py", BUCKET_TYPED), cmd(*UNITTEST)],
               "Typed the four public functions (BucketState TypedDict for the state, float | None for retry_after); behaviour unchanged, 3 tests pass."),
    ])
    c.expect = {"ending": "GOAL_MET", "predicate_met": True, "verified": ["t1"],
                "files_contain": {"src/gateway/bucket.py": "def retry_after(state: BucketState, cost: int = 1) -> float | None:"},
                "request_contains_in_order": [
                    {"call_key": "execute/t1/a0/3", "strings": ["passed; exit code: 0", "Ran 3 tests"]}]}
    return c


# ---------------------------------------------------------------- 8. the minimum Python, consistently
PYPROJECT = """[project]
name = "tidewater"
version = "4.2.0"
description = "Tide tables and harbour schedules"
requires-python = ">=3.8"
classifiers = [
  "Programming Language :: Python :: 3",
  "Programming Language :: Python :: 3.8",
  "Programming Language :: Python :: 3.9",
  "Programming Language :: Python :: 3.10",
  "Programming Language :: Python :: 3.11",
  "Programming Language :: Python :: 3.12",
]
dependencies = ["numpy>=1.24"]

[tool.ruff]
target-version = "py38"
line-length = 100
"""

PYPROJECT_310 = PYPROJECT.replace('">=3.8"', '">=3.10"').replace(
    '  "Programming Language :: Python :: 3.8",\n  "Programming Language :: Python :: 3.9",\n', "").replace('"py38"', '"py310"')

CI_YML = """name: ci
on: [push, pull_request]
jobs:
  test:
    runs-on: ubuntu-latest
    strategy:
      matrix:
        python-version: ["3.8", "3.9", "3.10", "3.11", "3.12"]
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: ${{ matrix.python-version }}
      - run: pip install -e . pytest
      - run: pytest -q
"""

TOX = "[tox]\nenvlist = py38, py39, py310, py311, py312, lint\n\n[testenv]\ndeps = pytest\ncommands = pytest -q\n"

TIDE_README = "# tidewater\n\nTide tables and harbour schedules.\n\n## Install\n\nRequires Python 3.8 or later:\n\n    pip install tidewater\n"


def min_python():
    c = CodingCase("happy-min-python-310", "happy", "The minimum Python is raised to 3.10 in pyproject, the CI matrix, tox and the README alike",
                   ["GOAL_MET", "dependency-bump", "ci-config", "coding-tools"],
                   "Drop Python 3.8 and 3.9 (both end of life) from tidewater 4.3: the minimum becomes 3.10, consistently in pyproject.toml (requires-python, classifiers, ruff's target), the CI matrix, tox.ini and the README.")
    c.ws("pyproject.toml", PYPROJECT)
    c.ws(".github/workflows/ci.yml", CI_YML)
    c.ws("tox.ini", TOX)
    c.ws("README.md", TIDE_README)
    c.check_script("ci", "ci.sh", r'''#!/bin/sh
# CI and tox test exactly 3.10, 3.11 and 3.12 (and tox keeps its lint env).
grep -qF 'python-version: ["3.10", "3.11", "3.12"]' .github/workflows/ci.yml || { echo "CI matrix is not 3.10-3.12"; exit 1; }
grep -qx 'envlist = py310, py311, py312, lint' tox.ini || { echo "tox envlist is not py310-py312 + lint"; exit 1; }
echo "ci ok"
''', timeout=30)
    c.check_script("minpy", "minpy.py", r'''#!/usr/bin/env python3
# 3.10 is the minimum everywhere and no file still names 3.8 or 3.9.
import re, sys, tomllib
bad = []
meta = tomllib.load(open("pyproject.toml", "rb"))
if meta["project"].get("requires-python") != ">=3.10":
    bad.append(f"requires-python is {meta['project'].get('requires-python')!r}")
versions = sorted(c.rsplit(":: ", 1)[1] for c in meta["project"]["classifiers"] if re.search(r"Python :: 3\.\d+$", c))
if versions != ["3.10", "3.11", "3.12"]:
    bad.append(f"classifiers list {versions}")
if meta["tool"]["ruff"].get("target-version") != "py310":
    bad.append("ruff target-version is not py310")
for f in ("pyproject.toml", ".github/workflows/ci.yml", "tox.ini", "README.md"):
    text = open(f).read()
    for old in re.findall(r"\b3\.[89]\b(?!\d)|\bpy3[89]\b", text):
        bad.append(f"{f} still names {old}")
if "Python 3.10 or later" not in open("README.md").read():
    bad.append("README does not say Python 3.10 or later")
print("\n".join(bad) or "minimum Python 3.10 everywhere")
sys.exit(1 if bad else 0)
''')
    c.predicate = ("check", "minpy")
    c.tools = CODING + ["write_file"]
    c.run([
        plan_call([task("t1", "pyproject.toml: requires-python >=3.10, drop the 3.8/3.9 classifiers, ruff target py310", V.contains("pyproject.toml", 'requires-python = ">=3.10"')),
                   task("t2", "CI matrix and tox envlist: 3.10, 3.11, 3.12 only", V.check("ci")),
                   task("t3", "README: Python 3.10 or later; nothing names 3.8/3.9 any more", V.check("minpy"))]),
        *steps("t1", [read("pyproject.toml"), write("pyproject.toml", PYPROJECT_310)], "pyproject raised to 3.10."),
        *steps("t2", [edit(".github/workflows/ci.yml", '["3.8", "3.9", "3.10", "3.11", "3.12"]', '["3.10", "3.11", "3.12"]'),
                      edit("tox.ini", "envlist = py38, py39, py310", "envlist = py310")],
               "CI and tox test 3.10-3.12."),
        *steps("t3", [grep(r"3\.[89]\b|py3[89]"), edit("README.md", "Requires Python 3.8 or later", "Requires Python 3.10 or later")],
               "README updated; no file names 3.8 or 3.9."),
    ])
    c.expect = {"ending": "GOAL_MET", "predicate_met": True, "verified": ["t1", "t2", "t3"], "verified_count": 3,
                "files_contain": {"tox.ini": "envlist = py310, py311, py312, lint", "README.md": "Python 3.10 or later"},
                "request_contains_in_order": [
                    {"call_key": "execute/t3/a0/1", "strings": ["README.md:7: Requires Python 3.8 or later"]}]}
    return c


# ---------------------------------------------------------------- 9. split a long function
MONTHLY = '''"""The monthly usage report mailed to each account owner."""


def build_report(account, rows):
    """rows: (day 'YYYY-MM-DD', service, units, cents). Returns the report text."""
    # aggregate
    by_service = {}
    days = set()
    total_cents = 0
    for day, service, units, cents in rows:
        if units < 0 or cents < 0:
            raise ValueError(f"negative usage on {day} for {service}")
        entry = by_service.setdefault(service, {"units": 0, "cents": 0})
        entry["units"] += units
        entry["cents"] += cents
        days.add(day)
        total_cents += cents
    busiest = max(by_service, key=lambda s: (by_service[s]["cents"], s)) if by_service else None
    # render
    lines = [f"Usage report for {account}", ""]
    if not by_service:
        lines.append("No usage this month.")
        return "\\n".join(lines) + "\\n"
    first, last = min(days), max(days)
    lines.append(f"Period: {first} to {last} ({len(days)} active days)")
    lines.append("")
    for service in sorted(by_service):
        e = by_service[service]
        lines.append(f"  {service:<12} {e['units']:>8} units  ${e['cents'] / 100:>9.2f}")
    lines.append("")
    lines.append(f"Total: ${total_cents / 100:.2f}")
    lines.append(f"Largest cost: {busiest}")
    return "\\n".join(lines) + "\\n"
'''

MONTHLY_SPLIT = '''"""The monthly usage report mailed to each account owner."""


def build_report(account, rows):
    """rows: (day 'YYYY-MM-DD', service, units, cents). Returns the report text."""
    return render(account, summarize(rows))


def summarize(rows):
    """Totals per service, the active days, the total and the costliest service."""
    by_service = {}
    days = set()
    total_cents = 0
    for day, service, units, cents in rows:
        if units < 0 or cents < 0:
            raise ValueError(f"negative usage on {day} for {service}")
        entry = by_service.setdefault(service, {"units": 0, "cents": 0})
        entry["units"] += units
        entry["cents"] += cents
        days.add(day)
        total_cents += cents
    busiest = max(by_service, key=lambda s: (by_service[s]["cents"], s)) if by_service else None
    return {"by_service": by_service, "days": days, "total_cents": total_cents, "busiest": busiest}


def render(account, summary):
    """The report text for a summary from summarize()."""
    lines = [f"Usage report for {account}", ""]
    by_service, days = summary["by_service"], summary["days"]
    if not by_service:
        lines.append("No usage this month.")
        return "\\n".join(lines) + "\\n"
    lines.append(f"Period: {min(days)} to {max(days)} ({len(days)} active days)")
    lines.append("")
    for service in sorted(by_service):
        e = by_service[service]
        lines.append(f"  {service:<12} {e['units']:>8} units  ${e['cents'] / 100:>9.2f}")
    lines.append("")
    lines.append(f"Total: ${summary['total_cents'] / 100:.2f}")
    lines.append(f"Largest cost: {summary['busiest']}")
    return "\\n".join(lines) + "\\n"
'''

MONTHLY_TEST = '''import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
from reports.monthly import build_report  # noqa: E402

ROWS = [("2026-11-02", "storage", 120, 240), ("2026-11-02", "compute", 30, 1500),
        ("2026-11-17", "storage", 80, 160), ("2026-11-30", "egress", 5, 45)]


class Monthly(unittest.TestCase):
    def test_report(self):
        text = build_report("acme", ROWS)
        self.assertIn("Period: 2026-11-02 to 2026-11-30 (3 active days)", text)
        self.assertIn("  storage           200 units  $     4.00", text)
        self.assertIn("Total: $19.45", text)
        self.assertIn("Largest cost: compute", text)

    def test_empty(self):
        self.assertEqual(build_report("acme", []), "Usage report for acme\\n\\nNo usage this month.\\n")

    def test_negative_usage_is_refused(self):
        with self.assertRaises(ValueError):
            build_report("acme", [("2026-11-02", "storage", -1, 0)])


if __name__ == "__main__":
    unittest.main()
'''


def split_function():
    c = CodingCase("happy-split-long-function", "happy", "build_report is split into summarize and render, behaviour and tests unchanged",
                   ["GOAL_MET", "refactor", "run_command", "git"],
                   "Split build_report in src/reports/monthly.py into summarize(rows), which aggregates, and render(account, summary), which formats, so the billing page can reuse the totals; build_report must return exactly what it does today and the tests must pass.")
    c.ws("src/reports/__init__.py", "")
    c.ws("src/reports/monthly.py", MONTHLY)
    c.ws("tests/test_monthly.py", MONTHLY_TEST)
    c.ws(".gitignore", "__pycache__/\n")
    c.check_script("split", "split.py", r'''#!/usr/bin/env python3
# summarize and render exist and build_report is just render(account, summarize(rows));
# the output is byte for byte what the original returned (pinned here); the tests pass.
import ast, subprocess, sys
sys.dont_write_bytecode = True  # leave no __pycache__ in the workspace
sys.path.insert(0, "src")
bad = []
tree = ast.parse(open("src/reports/monthly.py").read())
funcs = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}
for name in ("summarize", "render", "build_report"):
    if name not in funcs:
        bad.append(f"no top-level {name}()")
if "build_report" in funcs:
    body = [s for s in funcs["build_report"].body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    calls = {n.func.id for n in ast.walk(funcs["build_report"]) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    if len(body) > 2 or not {"summarize", "render"} <= calls:
        bad.append("build_report must only call summarize and render")
if not bad:
    from reports.monthly import build_report, summarize
    rows = [("2026-10-01", "compute", 10, 999), ("2026-10-09", "egress", 7, 999), ("2026-10-09", "compute", 1, 1)]
    want = ("Usage report for zed\n\nPeriod: 2026-10-01 to 2026-10-09 (2 active days)\n\n"
            "  compute            11 units  $    10.00\n  egress              7 units  $     9.99\n\n"
            "Total: $19.99\nLargest cost: compute\n")
    got = build_report("zed", rows)
    if got != want:
        bad.append(f"output changed:\n{got}")
    summary = summarize(rows)
    if not isinstance(summary, dict) or summary.get("total_cents") != 1999:
        bad.append("summarize(rows) must return the totals (a dict with total_cents)")
t = subprocess.run([sys.executable, "-B", "-m", "unittest", "discover", "-s", "tests", "-q"], capture_output=True, text=True)
if t.returncode != 0:
    bad.append("tests fail:\n" + t.stderr[-1500:])
print("\n".join(bad) or "split, same output, tests pass")
sys.exit(1 if bad else 0)
''')
    c.predicate = ("check", "split")
    c.tools = ["read_file", "write_file", "list_files", "search", "run_check", "run_command"]
    c.run_command = (["python3"], 60)
    c.case_extra = {"workspace_git": True}
    c.run([
        plan_call([task("t1", "Move the aggregation of build_report into summarize(rows) and the formatting into render(account, summary); build_report calls both", V.check("split"))]),
        *steps("t1", [cmd(*UNITTEST), read("src/reports/monthly.py"), write("src/reports/monthly.py", MONTHLY_SPLIT), cmd(*UNITTEST)],
               "build_report is now render(account, summarize(rows)); the three tests pass before and after."),
    ])
    c.expect = {"ending": "GOAL_MET", "predicate_met": True, "verified": ["t1"],
                "commit_files": [["src/reports/monthly.py"]],
                "files_contain": {"src/reports/monthly.py": "return render(account, summarize(rows))"},
                "request_contains_in_order": [
                    {"call_key": "execute/t1/a0/1", "strings": ["passed; exit code: 0", "Ran 3 tests"]},
                    {"call_key": "execute/t1/a0/4", "strings": ["passed; exit code: 0", "Ran 3 tests"]}]}
    return c


# ---------------------------------------------------------------- 10. input validation plus its tests
TRANSFER = '''"""Payouts to connected accounts, sent to the bank API."""

MAX_TRANSFER_CENTS = 5_000_000  # $50,000: above it, treasury approves by hand
SUPPORTED_CURRENCIES = ("EUR", "GBP", "USD")


class InvalidTransfer(ValueError):
    """A transfer refused before it reaches the bank."""


def create_transfer(account_id, amount_cents, currency):
    """The transfer request the bank API takes."""
    return {"account": account_id, "amount": amount_cents, "currency": currency}
'''

VALIDATION = '''def create_transfer(account_id, amount_cents, currency):
    """The transfer request the bank API takes; bad input raises InvalidTransfer naming the field."""
    # bool is an int subclass: True would be a 1-cent transfer.
    if type(amount_cents) is not int:
        raise InvalidTransfer(f"amount_cents must be an integer number of cents, got {amount_cents!r}")
    if not 0 < amount_cents <= MAX_TRANSFER_CENTS:
        raise InvalidTransfer(f"amount_cents must be in 1..{MAX_TRANSFER_CENTS}, got {amount_cents}")
    if currency not in SUPPORTED_CURRENCIES:
        raise InvalidTransfer(f"currency must be one of {', '.join(SUPPORTED_CURRENCIES)}, got {currency!r}")
'''

TRANSFER_TEST = '''import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
from payouts.transfer import create_transfer  # noqa: E402


class CreateTransfer(unittest.TestCase):
    def test_request_shape(self):
        self.assertEqual(create_transfer("acct_1", 1250, "EUR"), {"account": "acct_1", "amount": 1250, "currency": "EUR"})


if __name__ == "__main__":
    unittest.main()
'''

NEW_TESTS = '''        self.assertEqual(create_transfer("acct_1", 1250, "EUR"), {"account": "acct_1", "amount": 1250, "currency": "EUR"})

    def test_amount_must_be_positive_whole_cents(self):
        for bad in (0, -100, 12.5, "1250", True):
            with self.assertRaises(InvalidTransfer, msg=repr(bad)):
                create_transfer("acct_1", bad, "EUR")

    def test_amount_above_the_cap_is_refused(self):
        create_transfer("acct_1", MAX_TRANSFER_CENTS, "EUR")
        with self.assertRaises(InvalidTransfer):
            create_transfer("acct_1", MAX_TRANSFER_CENTS + 1, "EUR")

    def test_unsupported_currency_is_refused(self):
        with self.assertRaises(InvalidTransfer):
            create_transfer("acct_1", 1250, "JPY")
'''


def transfer_validation():
    c = CodingCase("happy-transfer-amount-validation", "happy", "create_transfer refuses bad amounts and currencies before the bank call, with tests",
                   ["GOAL_MET", "input-validation", "coding-tools", "run_command"],
                   "Payouts must refuse bad input before it reaches the bank API: create_transfer raises InvalidTransfer (naming the field) unless amount_cents is a whole number of cents in 1..MAX_TRANSFER_CENTS and currency is supported; cover each refusal in tests/test_transfer.py.")
    c.ws("src/payouts/__init__.py", "")
    c.ws("src/payouts/transfer.py", TRANSFER)
    c.ws("tests/test_transfer.py", TRANSFER_TEST)
    c.check_script("validation", "validation.py", r'''#!/usr/bin/env python3
# The rules, pinned outside the workspace: each bad input raises InvalidTransfer
# naming its field; good input still gives the bank request.
import sys
sys.dont_write_bytecode = True  # leave no __pycache__ in the workspace
sys.path.insert(0, "src")
from payouts.transfer import InvalidTransfer, MAX_TRANSFER_CENTS, create_transfer
bad = []
for amount, currency, field in [(0, "EUR", "amount_cents"), (-5, "EUR", "amount_cents"), (12.5, "EUR", "amount_cents"),
                                ("1250", "EUR", "amount_cents"), (True, "EUR", "amount_cents"),
                                (MAX_TRANSFER_CENTS + 1, "EUR", "amount_cents"), (1250, "JPY", "currency"), (1250, None, "currency")]:
    try:
        create_transfer("acct_9", amount, currency)
        bad.append(f"accepted {amount!r} {currency!r}")
    except InvalidTransfer as e:
        if field not in str(e):
            bad.append(f"{amount!r} {currency!r}: message does not name {field}: {e}")
    except Exception as e:
        bad.append(f"{amount!r} {currency!r}: raised {type(e).__name__}, not InvalidTransfer")
for amount in (1, MAX_TRANSFER_CENTS):
    if create_transfer("acct_9", amount, "USD") != {"account": "acct_9", "amount": amount, "currency": "USD"}:
        bad.append(f"valid transfer of {amount} changed")
print("\n".join(bad) or "validation ok")
sys.exit(1 if bad else 0)
''')
    c.check_script("tests", "tests.sh", r'''#!/bin/sh
# The workspace tests cover the refusals (at least three assertRaises(InvalidTransfer))
# and pass, and the pinned rules hold.
n=$(grep -c 'assertRaises(InvalidTransfer' tests/test_transfer.py)
[ "$n" -ge 3 ] || { echo "tests/test_transfer.py has $n assertRaises(InvalidTransfer), want at least 3"; exit 1; }
python3 -B -m unittest discover -s tests -q 2>&1 || exit 1
python3 -B "$(dirname "$0")/validation.py"
''')
    c.predicate = ("check", "tests")
    c.tools = CODING + ["run_command"]
    c.run_command = (["python3"], 60)
    c.run([
        plan_call([task("t1", "Validate amount_cents (int, not bool, 1..MAX_TRANSFER_CENTS) and currency in create_transfer, raising InvalidTransfer", V.check("validation")),
                   task("t2", "Add tests for each refusal to tests/test_transfer.py and run them", V.check("tests"))]),
        *steps("t1", [read("src/payouts/transfer.py"),
                      edit("src/payouts/transfer.py",
                           'def create_transfer(account_id, amount_cents, currency):\n    """The transfer request the bank API takes."""\n',
                           VALIDATION)],
               "create_transfer now refuses non-integer, boolean, non-positive and over-cap amounts and unsupported currencies."),
        *steps("t2", [edit("tests/test_transfer.py", "from payouts.transfer import create_transfer  # noqa: E402",
                           "from payouts.transfer import MAX_TRANSFER_CENTS, InvalidTransfer, create_transfer  # noqa: E402"),
                      edit("tests/test_transfer.py",
                           '        self.assertEqual(create_transfer("acct_1", 1250, "EUR"), {"account": "acct_1", "amount": 1250, "currency": "EUR"})\n',
                           NEW_TESTS),
                      cmd(*UNITTEST)],
               "Three refusal tests added (amount type and sign, the cap, the currency); 4 tests pass."),
    ])
    c.expect = {"ending": "GOAL_MET", "predicate_met": True, "verified": ["t1", "t2"],
                "files_contain": {"src/payouts/transfer.py": "raise InvalidTransfer(",
                                  "tests/test_transfer.py": "def test_unsupported_currency_is_refused"},
                "request_contains_in_order": [
                    {"call_key": "execute/t2/a0/3", "strings": ["passed; exit code: 0", "Ran 4 tests"]}]}
    return c


def cases():
    return [cli_help_readme(), rotate_config_key(), dockerfile_healthcheck(), index_migration(), backup_script_vars(),
            docs_broken_links(), type_hints(), min_python(), split_function(), transfer_validation()]
