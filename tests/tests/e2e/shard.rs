//! The CI matrix of docs/bench.md, "Sharding in CI": `bench run --shard i/n` per job, then
//! `bench merge` gates on the union.

use e2e::*;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;

fn ids(s: &Value) -> BTreeSet<String> {
    s["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_owned())
        .collect()
}

fn shard_run(suite: &Path, out: &Path, shard: &str) -> Out {
    run(bench(&["run", "--runs-per-case", "1", "--shard", shard])
        .arg("--suite")
        .arg(suite)
        .arg("--out")
        .arg(out))
}

#[test]
fn two_shards_merge_to_the_unsharded_verdict_and_a_bad_set_is_refused() {
    let t = tempfile::tempdir().unwrap();
    let suite = small_suite(t.path(), &SMALL_CASES);
    let (s1, s2) = (t.path().join("shard-1"), t.path().join("shard-2"));
    for (dir, shard) in [(&s1, "1/2"), (&s2, "2/2")] {
        let o = shard_run(&suite, dir, shard);
        assert_eq!(o.code, 0, "shard {shard}: {}", o.log());
    }
    let (a, b) = (
        read_json(&s1.join("summary.json")),
        read_json(&s2.join("summary.json")),
    );
    let (ia, ib) = (ids(&a), ids(&b));
    assert!(ia.is_disjoint(&ib), "{ia:?} {ib:?}");
    let all: BTreeSet<String> = SMALL_CASES.iter().map(|(_, id)| id.to_string()).collect();
    assert_eq!(&ia | &ib, all, "the shards cover the suite");

    let merged = t.path().join("merged");
    let o = run(bench(&["merge"])
        .arg(&s1)
        .arg(&s2)
        .arg("--out")
        .arg(&merged));
    assert_eq!(o.code, 0, "{}", o.log());
    let m = read_json(&merged.join("summary.json"));
    assert!(merged.join("junit.xml").is_file() && merged.join("summary.md").is_file());

    let whole = t.path().join("whole");
    let o = run(bench(&["run", "--runs-per-case", "1", "--suite"])
        .arg(&suite)
        .arg("--out")
        .arg(&whole));
    assert_eq!(o.code, 0, "{}", o.log());
    let w = read_json(&whole.join("summary.json"));
    // Every verdict and count the gate reads is the unsharded run's;
    // latencies differ from run to run and are not compared.
    assert_eq!(ids(&m), ids(&w));
    assert_eq!(m["passed"], w["passed"]);
    assert_eq!(m["config_hash"], w["config_hash"]);
    for k in ["passed", "total", "flaky", "runs_passed", "runs_total"] {
        assert_eq!(m["overall"][k], w["overall"][k], "overall.{k}");
        for (cat, _) in SMALL_CASES {
            assert_eq!(
                m["categories"][cat][k], w["categories"][cat][k],
                "{cat}.{k}"
            );
        }
    }
    for c in w["cases"].as_array().unwrap() {
        let mc = m["cases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["id"] == c["id"])
            .unwrap();
        assert_eq!(mc["outcome"], c["outcome"], "{}", c["id"]);
        assert_eq!(
            mc["runs"][0]["ending"], c["runs"][0]["ending"],
            "{}",
            c["id"]
        );
    }

    // One shard alone is incomplete, and a shard twice is not disjoint:
    // both exit 3 (the suite result cannot be formed) and write nothing.
    for (set, what) in [(vec![&s1], "incomplete"), (vec![&s1, &s1], "overlapping")] {
        let out = t.path().join(format!("bad-{what}"));
        let o = run(bench(&["merge"]).args(set).arg("--out").arg(&out));
        assert_eq!(o.code, 3, "{what}: {}", o.log());
        assert!(o.stderr.contains("bench merge:"), "{what}: {}", o.log());
        assert!(!out.join("summary.json").exists(), "{what}");
    }
}
