//! `caf mcp` with a real MCP client: rmcp's client drives the built `caf` binary as a child
//! process over stdio, as an agent's MCP host would. Initialize, the tool list, every tool
//! (successes and the failures an agent can cause), the resources, 200 saves in one session,
//! and what goes to stdout and stderr. With `CAF_TEST_POSTGRES_URL`, also a database-only store
//! on PostgreSQL (skipped loudly otherwise).

#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

use caf_tests::cli::{caf_command, files, json_files, run_caf, s, Sandbox};
use caf_tests::{pg_base, pg_database};
use rmcp::model::{CallToolRequestParams, CallToolResult, ReadResourceRequestParams};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Value};
use std::collections::{BTreeSet, HashMap};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::Stdio;

type Client = RunningService<RoleClient, ()>;

/// Runs a test body on a runtime.
fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

/// `caf GLOBALS… mcp FLAGS…` as a child process, and a client connected to it (initialized).
async fn connect(globals: &[&str], flags: &[&str]) -> Client {
    let mut cmd = caf_command();
    cmd.args(globals)
        .arg("mcp")
        .args(flags)
        .env("CAF_LOG", "warn");
    let (transport, _) = TokioChildProcess::builder(tokio::process::Command::from(cmd))
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    ().serve(transport).await.unwrap()
}

/// `caf --dir DIR mcp FLAGS…`.
async fn start(dir: &Path, flags: &[&str]) -> Client {
    connect(&["--dir", s(dir)], flags).await
}

/// Calls a tool (the call itself must go through: a tool error is a result).
async fn call(c: &Client, tool: &str, args: Value) -> CallToolResult {
    let Value::Object(args) = args else {
        panic!("arguments must be an object")
    };
    c.call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(args))
        .await
        .unwrap_or_else(|e| panic!("{tool}: the call failed: {e}"))
}

/// The text blocks of a result.
fn texts(r: &CallToolResult) -> Vec<String> {
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect()
}

/// A successful result's structured content, after checking it has a one-line summary and the
/// JSON as text too.
fn ok(tool: &str, r: CallToolResult) -> (String, Value) {
    assert_eq!(r.is_error, Some(false), "{tool}: {:?}", texts(&r));
    let t = texts(&r);
    let value = r
        .structured_content
        .unwrap_or_else(|| panic!("{tool}: no structured content"));
    assert_eq!(t.len(), 2, "{tool}: {t:?}");
    assert!(!t[0].contains('\n') && !t[0].is_empty(), "{tool}: {t:?}");
    assert_eq!(
        serde_json::from_str::<Value>(&t[1]).unwrap(),
        value,
        "{tool}: the text JSON differs"
    );
    (t[0].clone(), value)
}

/// A tool error's message.
fn tool_error(tool: &str, r: CallToolResult) -> String {
    assert_eq!(
        r.is_error,
        Some(true),
        "{tool} should fail: {:?}",
        texts(&r)
    );
    let t = texts(&r);
    assert_eq!(t.len(), 1, "{tool}: {t:?}");
    t[0].clone()
}

/// Calls a tool that must refuse: its error message, which holds each of `words`.
async fn refused(c: &Client, tool: &str, args: Value, words: &[&str]) -> String {
    let m = tool_error(tool, call(c, tool, args).await);
    for w in words {
        assert!(m.contains(w), "{tool}: {m:?} lacks {w:?}");
    }
    m
}

/// A resource's text.
async fn read(c: &Client, uri: &str) -> Result<(String, Option<String>), String> {
    let r = c
        .read_resource(ReadResourceRequestParams::new(uri))
        .await
        .map_err(|e| e.to_string())?;
    match r.contents.into_iter().next() {
        Some(rmcp::model::ResourceContents::TextResourceContents {
            text, mime_type, ..
        }) => Ok((text, mime_type)),
        other => panic!("{uri}: {other:?}"),
    }
}

/// A state (snapshot parts) at step `n` of a plan of `of` steps.
fn state(n: u64, of: u64) -> Value {
    json!({
        "agent_id": "mcp-agent",
        "thought_chain": {"thoughts": (1..=n).map(|i| json!({
            "id": format!("t{i}"), "type": "reasoning", "content": format!("thought {i}"),
            "created_at": "2026-01-05T10:00:00Z"
        })).collect::<Vec<_>>()},
        "context": {"variables": {"step": n}, "state": {}, "history": []},
        "progress": {
            "step_number": n,
            "completed_steps": (1..=n).map(|i| json!({"name": format!("s{i}"), "completed_at": "2026-01-05T10:00:00Z"})).collect::<Vec<_>>(),
            "pending_steps": (n + 1..=of).map(|i| format!("s{i}")).collect::<Vec<_>>(),
        },
        "metadata": {"tokens_used": n * 10, "duration_ms": n * 100}
    })
}

/// Saves `state(n, of)` in `execution` (must succeed); the new checkpoint's id.
async fn save(c: &Client, execution: &str, n: u64, of: u64, extra: Value) -> String {
    let mut args = json!({"execution_id": execution, "state": state(n, of)});
    if let (Value::Object(a), Value::Object(e)) = (&mut args, extra) {
        a.extend(e);
    }
    let (_, v) = ok("checkpoint_save", call(c, "checkpoint_save", args).await);
    v["checkpoint"]["id"].as_str().unwrap().to_string()
}

const TOOLS: [&str; 9] = [
    "checkpoint_delete",
    "checkpoint_diff",
    "checkpoint_fork",
    "checkpoint_inspect",
    "checkpoint_list",
    "checkpoint_load",
    "checkpoint_prune",
    "checkpoint_resume",
    "checkpoint_save",
];

#[test]
fn initialize_answers_name_version_instructions_and_lists_the_tools_with_schemas() {
    let sb = Sandbox::new();
    block_on(async {
        let c = start(&sb.store(), &[]).await;
        let info = c.peer_info().unwrap();
        let server = info.server_info.clone().unwrap();
        assert_eq!(server.name, "caf");
        assert_eq!(server.version, env!("CARGO_PKG_VERSION"));
        let instructions = info.instructions.clone().unwrap();
        assert!(
            instructions.contains("checkpoint_save") && instructions.contains("checkpoint_resume"),
            "{instructions}"
        );
        assert!(info.capabilities.tools.is_some() && info.capabilities.resources.is_some());

        let tools = c.list_all_tools().await.unwrap();
        let names: BTreeSet<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(names, TOOLS.into_iter().collect());
        for t in &tools {
            assert!(
                t.description.as_ref().is_some_and(|d| d.len() > 40),
                "{}: {:?}",
                t.name,
                t.description
            );
            let schema = Value::Object((*t.input_schema).clone());
            assert_eq!(schema["type"], "object", "{}: {schema}", t.name);
            let props = schema["properties"].as_object().unwrap();
            assert!(!props.is_empty(), "{}: {schema}", t.name);
            for (name, p) in props {
                assert!(
                    p["description"].as_str().is_some_and(|d| !d.is_empty()),
                    "{}.{name} has no description: {schema}",
                    t.name
                );
            }
        }
        let save = tools.iter().find(|t| t.name == "checkpoint_save").unwrap();
        let schema = Value::Object((*save.input_schema).clone());
        let required: BTreeSet<&str> = schema["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(required, ["execution_id", "state"].into_iter().collect());
        assert_eq!(schema["properties"]["state"]["type"], "object", "{schema}");
        assert_eq!(schema["properties"]["labels"]["type"], "array", "{schema}");
        c.cancel().await.unwrap();
    });
}

#[test]
fn every_tool_works_on_a_fresh_directory() {
    let sb = Sandbox::new();
    let dir = sb.store();
    assert!(!dir.exists());
    block_on(async {
        let c = start(&dir, &["--allow-delete"]).await;
        // Save: three steps of a run, then one more in another execution.
        let a1 = save(&c, "exec_a", 1, 3, json!({"reason": "auto"})).await;
        let a2 = save(
            &c,
            "exec_a",
            2,
            3,
            json!({"name": "halfway", "description": "two done", "labels": ["keep"]}),
        )
        .await;
        let (summary, saved) = ok(
            "checkpoint_save",
            call(
                &c,
                "checkpoint_save",
                json!({"session_id": "exec_a", "state": state(3, 3), "reason": "error"}),
            )
            .await,
        );
        let a3 = saved["checkpoint"]["id"].as_str().unwrap().to_string();
        assert!(
            summary.starts_with(&format!(
                "saved {a3} (execution exec_a, step 3, parent {a2}"
            )),
            "{summary}"
        );
        assert_eq!(saved["checkpoint"]["parent_id"], a2.as_str());
        assert_eq!(saved["checkpoint"]["checkpoint_reason"], "error");
        let b1 = save(&c, "exec_b", 1, 2, json!({"agent_id": "other"})).await;
        assert!(dir.join(format!("{a1}.json")).is_file());
        let on_disk = caf_core::FileStore::open(&dir).unwrap();
        let c2 =
            caf_core::CheckpointStore::load(&on_disk, &caf_core::CheckpointId::new(&a2).unwrap())
                .unwrap();
        assert_eq!(c2.metadata.name.as_deref(), Some("halfway"));
        assert_eq!(c2.metadata.description.as_deref(), Some("two done"));
        assert_eq!(c2.metadata.labels, ["keep"]);
        assert_eq!(c2.parent_id.as_ref().unwrap().as_str(), a1);

        // Load: by id, and the latest of an execution.
        let (_, v) = ok(
            "checkpoint_load",
            call(&c, "checkpoint_load", json!({"checkpoint_id": a1})).await,
        );
        assert_eq!(v["checkpoint"]["id"], a1.as_str());
        assert_eq!(
            v["checkpoint"]["snapshot"]["context"]["variables"]["step"],
            1
        );
        assert_eq!(v["remaining_steps"], json!(["s2", "s3"]));
        let (text, v) = ok(
            "checkpoint_load",
            call(&c, "checkpoint_load", json!({"execution_id": "exec_a"})).await,
        );
        assert_eq!(v["checkpoint"]["id"], a3.as_str(), "{text}");
        assert_eq!(v["skipped"], json!([]));
        assert_eq!(v["from_database"], false);

        // List: filters, limit, paging.
        let (_, v) = ok(
            "checkpoint_list",
            call(&c, "checkpoint_list", json!({})).await,
        );
        let ids: Vec<&str> = v["checkpoints"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, [b1.as_str(), a3.as_str(), a2.as_str(), a1.as_str()]);
        assert_eq!(v["next_before"], Value::Null);
        let (text, v) = ok(
            "checkpoint_list",
            call(
                &c,
                "checkpoint_list",
                json!({"execution_id": "exec_a", "limit": 2}),
            )
            .await,
        );
        let ids: Vec<&str> = v["checkpoints"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, [a3.as_str(), a2.as_str()]);
        assert_eq!(v["next_before"], a2.as_str());
        assert!(text.contains(&format!("before={a2}")), "{text}");
        let (_, v) = ok(
            "checkpoint_list",
            call(
                &c,
                "checkpoint_list",
                json!({"execution_id": "exec_a", "before": a2}),
            )
            .await,
        );
        assert_eq!(v["checkpoints"][0]["id"], a1.as_str());
        let (_, v) = ok(
            "checkpoint_list",
            call(&c, "checkpoint_list", json!({"label": "keep"})).await,
        );
        assert_eq!(v["checkpoints"].as_array().unwrap().len(), 1);
        let (_, v) = ok(
            "checkpoint_list",
            call(&c, "checkpoint_list", json!({"reason": "error"})).await,
        );
        assert_eq!(v["checkpoints"][0]["id"], a3.as_str());
        let (_, v) = ok(
            "checkpoint_list",
            call(&c, "checkpoint_list", json!({"agent_id": "other"})).await,
        );
        assert_eq!(v["checkpoints"][0]["id"], b1.as_str());

        // Inspect.
        let (text, v) = ok(
            "checkpoint_inspect",
            call(
                &c,
                "checkpoint_inspect",
                json!({"checkpoint_id": a2, "last": 1}),
            )
            .await,
        );
        assert!(
            text.contains("execution exec_a") && text.contains("2 thoughts"),
            "{text}"
        );
        assert_eq!(v["name"], "halfway");
        assert_eq!(v["parent_id"], a1.as_str());
        assert_eq!(v["children"], json!([a3]));
        assert_eq!(v["counts"]["thoughts"], 2);
        assert_eq!(v["last_thoughts"].as_array().unwrap().len(), 1);
        assert_eq!(v["last_thoughts"][0]["id"], "t2");
        assert_eq!(v["progress"]["remaining_steps"], json!(["s3"]));
        assert_eq!(
            v["stored"]["bytes"],
            std::fs::metadata(dir.join(format!("{a2}.json")))
                .unwrap()
                .len()
        );
        assert_eq!(v["stored"]["integrity_checked"], true);

        // Diff: against the parent, and between two ids.
        let (text, v) = ok(
            "checkpoint_diff",
            call(&c, "checkpoint_diff", json!({"checkpoint_id": a2})).await,
        );
        assert_eq!(v["from"], a1.as_str());
        assert_eq!(v["thoughts_added"].as_array().unwrap().len(), 1);
        assert!(text.contains("1 thought added"), "{text}");
        let (_, v) = ok(
            "checkpoint_diff",
            call(
                &c,
                "checkpoint_diff",
                json!({"checkpoint_id": a3, "from_id": a1}),
            )
            .await,
        );
        assert_eq!(v["thoughts_added"].as_array().unwrap().len(), 2);
        assert!(
            v["context_changes"]
                .as_array()
                .unwrap()
                .iter()
                .any(|ch| ch["path"] == "/variables/step"),
            "{v}"
        );
        let (text, _) = ok(
            "checkpoint_diff",
            call(
                &c,
                "checkpoint_diff",
                json!({"checkpoint_id": a1, "from_id": a1}),
            )
            .await,
        );
        assert!(text.ends_with("no differences"), "{text}");

        // Resume: an execution, and a checkpoint.
        let (text, v) = ok(
            "checkpoint_resume",
            call(&c, "checkpoint_resume", json!({"id": "exec_a"})).await,
        );
        assert_eq!(v["checkpoint"], a3.as_str());
        assert_eq!(v["status"], "failed");
        assert_eq!(v["resumable"], true);
        assert_eq!(
            v["progress"],
            json!({"done": 3, "total": 3, "percent": 100, "step_number": 3})
        );
        assert!(text.contains("3/3 steps"), "{text}");
        let (_, v) = ok(
            "checkpoint_resume",
            call(&c, "checkpoint_resume", json!({"id": a1})).await,
        );
        assert_eq!(v["remaining_steps"], json!(["s2", "s3"]));
        assert_eq!(v["progress"]["percent"], 33);

        // Fork into a new execution, and continue the branch with a save.
        let (text, v) = ok("checkpoint_fork", call(&c, "checkpoint_fork", json!({"checkpoint_id": a2, "name": "try-b", "reason": "another way", "execution_id": "exec_fork"})).await);
        let f = v["id"].as_str().unwrap().to_string();
        assert_eq!(v["parent_id"], a2.as_str());
        assert_eq!(v["checkpoint_reason"], "branch");
        assert_eq!(v["execution_id"], "exec_fork");
        assert!(text.starts_with(&format!("forked {f} from {a2}")), "{text}");
        let f2 = save(&c, "exec_fork", 3, 3, json!({"parent": f})).await;
        let (_, v) = ok(
            "checkpoint_load",
            call(&c, "checkpoint_load", json!({"checkpoint_id": f2})).await,
        );
        assert_eq!(v["checkpoint"]["parent_id"], f.as_str());

        // Prune: a dry run deletes nothing, a real one deletes what it said.
        let before = json_files(&dir);
        let (text, v) = ok(
            "checkpoint_prune",
            call(
                &c,
                "checkpoint_prune",
                json!({"keep_last": 1, "execution_id": "exec_a", "dry_run": true}),
            )
            .await,
        );
        assert_eq!(v["dry_run"], true, "{text}");
        let would: Vec<String> = v["plan"]["delete"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["id"].as_str().unwrap().to_string())
            .collect();
        // a2 is named and labelled keep, a3 is the latest: only a1 may go.
        assert_eq!(would, [a1.as_str()], "{v}");
        assert_eq!(json_files(&dir), before);
        let (text, v) = ok(
            "checkpoint_prune",
            call(
                &c,
                "checkpoint_prune",
                json!({"keep_last": 1, "execution_id": "exec_a"}),
            )
            .await,
        );
        assert_eq!(v["deleted"], json!([a1]), "{text}");
        assert!(!dir.join(format!("{a1}.json")).exists());
        assert!(text.starts_with("deleted 1"), "{text}");

        // Delete: checkpoints, then an execution.
        let (_, v) = ok(
            "checkpoint_delete",
            call(&c, "checkpoint_delete", json!({"checkpoint_ids": [f2]})).await,
        );
        assert_eq!(v["deleted"], json!([f2]));
        assert!(!dir.join(format!("{f2}.json")).exists());
        let (text, v) = ok(
            "checkpoint_delete",
            call(&c, "checkpoint_delete", json!({"execution_id": "exec_b"})).await,
        );
        assert_eq!(v["deleted"], 1, "{text}");
        assert!(!dir.join(format!("{b1}.json")).exists());
        c.cancel().await.unwrap();
    });
    // What is left validates, and the command line sees what the server did.
    let out = run_caf(sb.path(), &["validate", &sb.store_str()], &[]).ok();
    assert!(out.out().contains("3 valid"), "{}", out.describe());
    assert_eq!(sb.list_ids().len(), 3);
}

#[test]
fn bad_input_is_a_tool_error_that_writes_nothing() {
    let sb = Sandbox::new();
    let dir = sb.store();
    block_on(async {
        let c = start(&dir, &["--max-state-bytes", "65536"]).await;
        let first = save(&c, "exec_a", 1, 2, json!({})).await;
        let before = files(&dir);

        // An unknown id.
        refused(
            &c,
            "checkpoint_load",
            json!({"checkpoint_id": "ckpt_nope"}),
            &["checkpoint ckpt_nope not found in", s(&dir)],
        )
        .await;
        refused(
            &c,
            "checkpoint_load",
            json!({"execution_id": "exec_nope"}),
            &["execution exec_nope not found"],
        )
        .await;
        for tool in ["checkpoint_inspect", "checkpoint_diff", "checkpoint_fork"] {
            refused(
                &c,
                tool,
                json!({"checkpoint_id": "ckpt_nope"}),
                &["ckpt_nope", "not found"],
            )
            .await;
        }
        refused(
            &c,
            "checkpoint_resume",
            json!({"id": "ckpt_nope"}),
            &["ckpt_nope: no execution or checkpoint with this id"],
        )
        .await;
        refused(
            &c,
            "checkpoint_list",
            json!({"before": "ckpt_nope"}),
            &["checkpoint ckpt_nope not found", "(before)"],
        )
        .await;
        refused(
            &c,
            "checkpoint_save",
            json!({"execution_id": "exec_a", "state": {}, "parent": "ckpt_nope"}),
            &["parent checkpoint ckpt_nope not found", "nothing saved"],
        )
        .await;
        refused(
            &c,
            "checkpoint_diff",
            json!({"checkpoint_id": first}),
            &["is a root checkpoint", "from_id"],
        )
        .await;

        // A malformed state: the message names its JSON Pointer in the state.
        refused(
            &c,
            "checkpoint_save",
            json!({"execution_id": "exec_a", "state": {"progress": {"step_number": "three"}}}),
            &["at /progress/step_number:", "nothing saved"],
        )
        .await;
        refused(&c, "checkpoint_save", json!({"execution_id": "exec_a", "state": {"thought_chain": {"thoughts": [{"id": "t1", "type": "reasoning"}]}}}), &["at /thought_chain/thoughts/0", "content"]).await;
        refused(
            &c,
            "checkpoint_save",
            json!({"execution_id": "exec_a", "state": {"colour": "red"}}),
            &["colour", "nothing saved"],
        )
        .await;
        // Nested deeper than the format allows (but within what JSON-RPC parsing takes).
        let mut deep = json!(1);
        for _ in 0..80 {
            deep = json!([deep]);
        }
        let m = refused(&c, "checkpoint_save", json!({"execution_id": "exec_a", "state": {"context": {"variables": {"deep": deep}, "state": {}, "history": []}}}), &["nothing saved"]).await;
        assert!(m.contains("/context/variables/deep/0/0"), "{m}");
        refused(
            &c,
            "checkpoint_save",
            json!({"execution_id": "exec_new", "state": {}}),
            &["no agent id"],
        )
        .await;
        // Malformed arguments: where they are wrong.
        refused(
            &c,
            "checkpoint_save",
            json!({"execution_id": "exec_a", "state": "not an object"}),
            &["bad arguments: at /state:"],
        )
        .await;
        refused(
            &c,
            "checkpoint_save",
            json!({"execution_id": "exec_a", "state": {}, "labels": [1]}),
            &["at /labels/0:"],
        )
        .await;
        refused(
            &c,
            "checkpoint_save",
            json!({"state": {}}),
            &["execution_id"],
        )
        .await;
        refused(
            &c,
            "checkpoint_save",
            json!({"execution_id": "exec_a", "state": {}, "reason": "Not A Word"}),
            &["reason:", "snake_case"],
        )
        .await;
        refused(
            &c,
            "checkpoint_list",
            json!({"limit": 5000}),
            &["limit 5000"],
        )
        .await;
        refused(
            &c,
            "checkpoint_list",
            json!({"colour": 1}),
            &["unknown field `colour`"],
        )
        .await;
        refused(
            &c,
            "checkpoint_load",
            json!({}),
            &["checkpoint_id or execution_id"],
        )
        .await;
        refused(&c, "checkpoint_prune", json!({}), &["no retention policy"]).await;
        refused(
            &c,
            "checkpoint_prune",
            json!({"max_age": "soon"}),
            &["max_age"],
        )
        .await;

        // Ids that would leave the directory.
        refused(
            &c,
            "checkpoint_load",
            json!({"checkpoint_id": "../../etc/passwd"}),
            &["not a valid checkpoint id", "'/'"],
        )
        .await;
        refused(
            &c,
            "checkpoint_save",
            json!({"execution_id": "../outside", "state": {"agent_id": "x"}}),
            &["not a valid execution id"],
        )
        .await;
        refused(
            &c,
            "checkpoint_save",
            json!({"execution_id": "exec_a", "state": {}, "parent": ".."}),
            &["not a valid checkpoint id"],
        )
        .await;
        refused(
            &c,
            "checkpoint_resume",
            json!({"id": "a/../../b"}),
            &["not a valid"],
        )
        .await;
        assert!(read(&c, "checkpoint://../secret")
            .await
            .unwrap_err()
            .contains("not a valid checkpoint id"));
        assert!(read(&c, "execution://..")
            .await
            .unwrap_err()
            .contains("not a valid execution id"));
        assert!(read(&c, "checkpoint://ckpt_nope")
            .await
            .unwrap_err()
            .contains("not found"));
        assert!(read(&c, "file:///etc/passwd")
            .await
            .unwrap_err()
            .contains("no such resource"));

        // A huge state: over the limit the server was started with, a tool error.
        let big = "x".repeat(100_000);
        refused(&c, "checkpoint_save", json!({"execution_id": "exec_a", "state": {"context": {"variables": {"big": big}, "state": {}, "history": []}}}), &["bytes of JSON; the limit is 65536 bytes", "nothing saved"]).await;
        // Over the transport's line limit as well: the request is dropped unread (never
        // answered), and the server goes on serving.
        let huge = "y".repeat(3 << 20);
        let peer = c.peer().clone();
        let pending = tokio::spawn(async move {
            let mut args = serde_json::Map::new();
            args.insert("execution_id".into(), json!("exec_a"));
            args.insert(
                "state".into(),
                json!({"context": {"variables": {"huge": huge}}}),
            );
            peer.call_tool(CallToolRequestParams::new("checkpoint_save").with_arguments(args))
                .await
        });
        // Deleting and pruning need --allow-delete.
        refused(
            &c,
            "checkpoint_delete",
            json!({"checkpoint_ids": [first]}),
            &["--allow-delete", "nothing deleted"],
        )
        .await;
        let (text, v) = ok(
            "checkpoint_prune",
            call(&c, "checkpoint_prune", json!({"keep_last": 1})).await,
        );
        assert_eq!(v["dry_run"], true);
        assert_eq!(v["deleted"], json!([]));
        assert!(text.contains("without --allow-delete"), "{text}");

        // Still serving, and nothing was written by any of it.
        let (_, v) = ok(
            "checkpoint_list",
            call(&c, "checkpoint_list", json!({})).await,
        );
        assert_eq!(v["checkpoints"].as_array().unwrap().len(), 1);
        assert!(
            !pending.is_finished(),
            "the oversized request was answered: {:?}",
            pending.await
        );
        pending.abort();
        assert_eq!(files(&dir), before);
        c.cancel().await.unwrap();
    });
}

#[test]
fn resources_serve_checkpoints_executions_and_metrics() {
    let sb = Sandbox::new();
    let dir = sb.store();
    block_on(async {
        let c = start(&dir, &[]).await;
        let ids = [
            save(&c, "exec_r", 1, 3, json!({})).await,
            save(&c, "exec_r", 2, 3, json!({})).await,
            save(&c, "exec_r", 3, 3, json!({"reason": "resumed"})).await,
        ];

        let templates: BTreeSet<String> = c
            .list_all_resource_templates()
            .await
            .unwrap()
            .into_iter()
            .map(|t| t.uri_template.clone())
            .collect();
        assert_eq!(
            templates,
            [
                "checkpoint://{id}".to_string(),
                "execution://{id}".to_string()
            ]
            .into_iter()
            .collect()
        );
        let listed: BTreeSet<String> = c
            .list_all_resources()
            .await
            .unwrap()
            .into_iter()
            .map(|r| r.uri.clone())
            .collect();
        for uri in ["metrics://store", "metrics://server", "execution://exec_r"] {
            assert!(listed.contains(uri), "{uri} not in {listed:?}");
        }

        // checkpoint://: the file's JSON document, byte for byte.
        let (text, mime) = read(&c, &format!("checkpoint://{}", ids[1])).await.unwrap();
        assert_eq!(mime.as_deref(), Some("application/json"));
        assert_eq!(
            text.as_bytes(),
            std::fs::read(dir.join(format!("{}.json", ids[1]))).unwrap()
        );

        // execution://: its history, newest first, with parents and children.
        let (text, _) = read(&c, "execution://exec_r").await.unwrap();
        let log: Vec<Value> = serde_json::from_str(&text).unwrap();
        let got: Vec<&str> = log.iter().map(|e| e["id"].as_str().unwrap()).collect();
        assert_eq!(got, [ids[2].as_str(), ids[1].as_str(), ids[0].as_str()]);
        assert_eq!(log[1]["parent_id"], ids[0].as_str());
        assert_eq!(log[1]["children"], json!([ids[2]]));
        assert_eq!(log[0]["latest"], true);
        assert_eq!(log[0]["head"], true);
        assert!(read(&c, "execution://exec_nope")
            .await
            .unwrap_err()
            .contains("execution exec_nope not found"));

        // metrics://store: what the store holds; metrics://server: what this process did.
        let (text, mime) = read(&c, "metrics://store").await.unwrap();
        assert_eq!(mime.as_deref(), Some("text/plain; version=0.0.4"));
        let m = metrics_of(&text);
        let label = s(&dir);
        assert_eq!(m[&("checkpoint_save_count", label.into())], 3.0);
        assert_eq!(m[&("checkpoint_resume_count", label.into())], 1.0);
        assert_eq!(m[&("steps_recovered", label.into())], 3.0);
        assert_eq!(m[&("checkpoints_stored", label.into())], 3.0);
        let sizes: u64 = ids
            .iter()
            .map(|id| {
                std::fs::metadata(dir.join(format!("{id}.json")))
                    .unwrap()
                    .len()
            })
            .sum();
        assert_eq!(
            m[&("checkpoint_save_size_bytes_sum", label.into())],
            sizes as f64
        );
        let (text, _) = read(&c, "metrics://server").await.unwrap();
        let m = metrics_of(&text);
        assert_eq!(m[&("checkpoint_save_count", label.into())], 3.0, "{text}");
        assert_eq!(
            m[&("checkpoint_save_latency_ms_count", label.into())],
            3.0,
            "{text}"
        );
        assert_eq!(m[&("checkpoint_resume_count", label.into())], 1.0, "{text}");
        c.cancel().await.unwrap();
    });
}

/// The samples of a Prometheus text by (name, `store` label): counters, gauges, and the `_sum`
/// and `_count` of histograms. The text must parse with every sample line used.
fn metrics_of(text: &str) -> HashMap<(&'static str, String), f64> {
    let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).unwrap();
    let mut out = HashMap::new();
    for sample in scrape.samples {
        let store = sample.labels.get("store").unwrap_or_default().to_string();
        let value = match sample.value {
            prometheus_parse::Value::Counter(v)
            | prometheus_parse::Value::Gauge(v)
            | prometheus_parse::Value::Untyped(v) => v,
            _ => continue,
        };
        let name: &'static str = Box::leak(sample.metric.into_boxed_str());
        out.insert((name, store), value);
    }
    out
}

#[test]
fn two_hundred_saves_from_one_session_all_land_and_validate() {
    let sb = Sandbox::new();
    let dir = sb.store();
    let ids = block_on(async {
        let c = start(&dir, &[]).await;
        let mut ids = Vec::new();
        // 100 one after another: one line of work.
        for n in 1..=100 {
            ids.push(save(&c, "exec_seq", n, 100, json!({})).await);
        }
        // 100 at once, in flight together, in four executions, each a new line.
        let mut set = tokio::task::JoinSet::new();
        for k in 0..100u64 {
            let peer = c.peer().clone();
            set.spawn(async move {
                let mut args = serde_json::Map::new();
                args.insert("execution_id".into(), json!(format!("exec_par_{}", k % 4)));
                args.insert("state".into(), state(k % 7 + 1, 8));
                args.insert("parent".into(), json!("none"));
                peer.call_tool(CallToolRequestParams::new("checkpoint_save").with_arguments(args))
                    .await
                    .unwrap()
            });
        }
        while let Some(r) = set.join_next().await {
            let (_, v) = ok("checkpoint_save", r.unwrap());
            ids.push(v["checkpoint"]["id"].as_str().unwrap().to_string());
        }
        c.cancel().await.unwrap();
        ids
    });
    assert_eq!(ids.iter().collect::<BTreeSet<_>>().len(), 200);
    let out = run_caf(sb.path(), &["validate", &sb.store_str()], &[]).ok();
    assert!(out.out().contains("200 valid"), "{}", out.describe());
    let store = caf_core::FileStore::open(&dir).unwrap();
    use caf_core::CheckpointStore as _;
    // The sequential ones form one chain, step 1 to 100.
    for (i, id) in ids[..100].iter().enumerate() {
        let c = store
            .load(&caf_core::CheckpointId::new(id).unwrap())
            .unwrap();
        assert_eq!(c.metadata.step_number, i as u64 + 1);
        assert_eq!(
            c.parent_id.as_ref().map(|p| p.to_string()),
            i.checked_sub(1).map(|j| ids[j].clone())
        );
    }
    for id in &ids[100..] {
        let c = store
            .load(&caf_core::CheckpointId::new(id).unwrap())
            .unwrap();
        assert!(c.parent_id.is_none());
        assert!(c.execution_id.as_str().starts_with("exec_par_"));
    }
    assert_eq!(sb.list(&["--execution", "exec_par_3"]).len(), 25);
}

#[test]
fn stdout_carries_only_the_protocol_and_logs_go_to_stderr() {
    let sb = Sandbox::new();
    let mut child = caf_command()
        .args(["--dir", &sb.store_str(), "mcp"])
        .env("CAF_LOG", "info")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let requests = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "checkpoint_save", "arguments": {"execution_id": "exec_raw", "state": {"agent_id": "raw"}}}}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "checkpoint_load", "arguments": {"checkpoint_id": "../x"}}}),
    ];
    for r in &requests {
        writeln!(stdin, "{r}").unwrap();
    }
    stdin.flush().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut answered = HashMap::new();
    while answered.len() < 3 {
        let mut line = String::new();
        assert!(
            stdout.read_line(&mut line).unwrap() > 0,
            "stdout closed early"
        );
        let v: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("not JSON-RPC on stdout: {line:?}: {e}"));
        assert_eq!(v["jsonrpc"], "2.0", "{v}");
        answered.insert(v["id"].as_i64().unwrap(), v);
    }
    assert_eq!(answered[&2]["result"]["isError"], false, "{}", answered[&2]);
    assert_eq!(answered[&3]["result"]["isError"], true, "{}", answered[&3]);
    drop(stdin); // the client goes away: the server ends
    let status = child.wait().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    assert!(rest.trim().is_empty(), "more on stdout: {rest:?}");
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(status.success(), "{status}: {err}");
    assert!(err.contains("caf mcp") && err.contains("serving"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn a_database_given_with_db_is_the_store_sqlite_and_postgres() {
    let sb = Sandbox::new();
    let db = sb.path().join("caf.db");
    let url = format!("sqlite://{}", db.display());
    // As for `caf save`, a SQLite database given with --db must exist: `caf sync` makes it.
    std::fs::create_dir_all(sb.store()).unwrap();
    sb.caf(&["--db", &url, "sync"]).ok();
    block_on(async {
        let c = connect(&["--dir", &sb.store_str(), "--db", &url], &[]).await;
        save(&c, "exec_db", 1, 2, json!({})).await;
        save(&c, "exec_db", 2, 2, json!({})).await;
        c.cancel().await.unwrap();
    });
    let out = sb
        .caf(&[
            "--db",
            &url,
            "--json",
            "sql",
            "SELECT COUNT(*) AS n FROM checkpoints",
        ])
        .ok();
    assert_eq!(out.json()["rows"][0][0], 2, "{}", out.describe());

    let Some(base) =
        pg_base("the PostgreSQL half of a_database_given_with_db_is_the_store_sqlite_and_postgres")
    else {
        return;
    };
    let pg = pg_database(&base);
    let other = Sandbox::new();
    block_on(async {
        let c = connect(
            &["--dir", &other.store_str(), "--db", pg.url(), "--no-files"],
            &[],
        )
        .await;
        let a = save(&c, "exec_pg", 1, 2, json!({})).await;
        let b = save(&c, "exec_pg", 2, 2, json!({})).await;
        let (_, v) = ok(
            "checkpoint_load",
            call(&c, "checkpoint_load", json!({"execution_id": "exec_pg"})).await,
        );
        assert_eq!(v["checkpoint"]["id"], b.as_str());
        assert_eq!(v["checkpoint"]["parent_id"], a.as_str());
        let (text, _) = read(&c, "metrics://store").await.unwrap();
        assert!(
            text.contains("checkpoint_save_count{store=") && text.contains("} 2"),
            "{text}"
        );
        c.cancel().await.unwrap();
    });
    assert!(
        json_files(&other.store()).is_empty(),
        "files were written for a database-only store"
    );
}
