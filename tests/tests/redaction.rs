//! Secrets never reach disk (issue 9, part 3): every kind of secret an agent might hold is
//! absent from the checkpoint files, the index, the SQLite database bytes, a PostgreSQL
//! database and `caf export` output; the redaction is counted in the checkpoint's metadata;
//! opting out is explicit (per key, per pattern, or altogether in `caf.toml`); a library user
//! who saves straight into a store is redacted too; and a database URL's password is never
//! printed, not even in part by libpq.

#![allow(clippy::unwrap_used)]

use caf_core::format::decode;
use caf_core::redact::RedactionRules;
use caf_core::{Checkpoint, CheckpointStore, FileStore, Limits};
use caf_tests::cli::{s, Sandbox};
use caf_tests::gen::CheckpointBuilder;
use caf_tests::{pg_base, pg_database, FourStores};
use serde_json::{json, Value};
use std::path::Path;

/// One secret of every kind caf knows, each made up and shaped like the real thing, with the
/// kind its marker names. Each is built from pieces so that the file holding this test is not
/// itself a file of secrets to scanners.
fn secrets() -> Vec<(&'static str, String)> {
    let jwt = [
        "eyJhbGciOiJIUzI1NiJ9",
        "eyJzdWIiOiIxMjM0NTY3ODkwIn0",
        "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    ]
    .join(".");
    vec![
        ("openai_key", format!("sk-{}", "proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z")),
        ("anthropic_key", format!("sk-{}", "ant-api03-Zy9xWv8uTs7rQp6oNm5lKj4iHg3fEd")),
        ("github_token", format!("ghp_{}", "0123456789abcdefghijABCDEFGHIJ0123456789")),
        ("aws_access_key", format!("AKIA{}", "IOSFODNN7EXAMPLE")),
        ("slack_token", format!("xoxb-{}", "1234567890-0987654321-AbCdEfGhIjKlMnOp")),
        ("jwt", jwt),
        (
            "private_key",
            format!(
                "-----BEGIN RSA {}-----\nMIIEowIBAAKCAQEA7zK9\nq1w2e3r4t5y6==\n-----END RSA {}-----",
                "PRIVATE KEY", "PRIVATE KEY"
            ),
        ),
    ]
}

/// A value that is secret only because of the key it is under.
const PASSWORD: &str = "correct-horse-battery-staple";
const API_KEY: &str = "k3y-0f-the-k1ngd0m";
const SECRET: &str = "the-cake-is-a-lie";
const TOKEN: &str = "opaque-session-t0ken";

/// What a secret leaves on disk that must never be found: the secret itself, or, for a
/// multi-line private key, its body line.
fn needles() -> Vec<String> {
    let mut out: Vec<String> = secrets()
        .into_iter()
        .map(|(kind, s)| match kind {
            "private_key" => "MIIEowIBAAKCAQEA7zK9".to_string(),
            _ => s,
        })
        .collect();
    out.extend([PASSWORD, API_KEY, SECRET, TOKEN].map(String::from));
    out
}

/// Snapshot parts (`caf save`) with a secret in thought content, tool arguments and results,
/// messages, variables, context state and history.
fn parts_with_secrets() -> Value {
    let s: Vec<String> = secrets().into_iter().map(|(_, s)| s).collect();
    json!({
        "agent_id": "leaky-agent",
        "thought_chain": {"thoughts": [
            {"id": "t1", "type": "reasoning", "created_at": "2026-11-23T10:00:00Z",
             "content": format!("I will call the API with {}", s[0])},
            {"id": "t2", "type": "observation", "created_at": "2026-11-23T10:00:01Z",
             "content": "nothing secret here", "reasoning": format!("the key was {}", s[1])}
        ]},
        "context": {
            "variables": {"password": PASSWORD, "step": 3, "apiKey": API_KEY,
                          "note": format!("aws {}", s[3])},
            "state": {"client_secret": SECRET, "slack": s[4]},
            "history": [{"event": "login", "bearer": s[5]}],
            "messages": [{"role": "user", "content": format!("my key:\n{}", s[6])},
                         {"role": "assistant", "content": "thanks"}]
        },
        "tool_state": {
            "calls": [{"id": "c1", "tool_id": "http_get", "status": "completed",
                       "args": {"url": "https://api.example.com", "headers": {"x-api-key": API_KEY},
                                "access_token": TOKEN},
                       "result": {"body": format!("deploy key {}", s[2])},
                       "started_at": "2026-11-23T10:00:02Z", "completed_at": "2026-11-23T10:00:03Z",
                       "success": true}],
            "results": {"http_get": {"body": format!("deploy key {}", s[2])}}
        },
        "progress": {"step_number": 3, "completed_steps": [], "pending_steps": ["next"]}
    })
}

/// How many values [`parts_with_secrets`] makes redaction replace: two thoughts, four
/// variables... counted by where they are.
const REPLACED: u64 = 2 // thought content, thought reasoning
    + 3 // variables: password, apiKey, note
    + 2 // state: client_secret, slack
    + 1 // history
    + 1 // messages
    + 3 // the call: x-api-key, access_token, result
    + 1; // tool results

fn save_parts(sb: &Sandbox, pre: &[&str], parts: &Value, exec: &str) -> caf_tests::cli::Out {
    let file = sb.path().join("parts.json");
    std::fs::write(&file, serde_json::to_vec(parts).unwrap()).unwrap();
    let mut args: Vec<&str> = pre.to_vec();
    args.extend(["--json", "save", "-e", exec, "-f", s(&file)]);
    sb.caf(&args)
}

/// Every file under `dir` (recursively), with its bytes.
fn all_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push((p.display().to_string(), std::fs::read(&p).unwrap()));
            }
        }
    }
    out
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

fn assert_no_secret_in(what: &str, bytes: &[u8]) {
    for n in needles() {
        assert!(!contains(bytes, &n), "{what} holds the secret {n:?}");
    }
}

fn checkpoint_file(sb: &Sandbox, id: &str) -> Value {
    serde_json::from_slice(&std::fs::read(sb.path_of(id)).unwrap()).unwrap()
}

#[test]
fn no_secret_reaches_a_file_the_sqlite_database_or_an_export() {
    let sb = Sandbox::new();
    // The directory's own database (`caf sync` makes it); every save then goes to both.
    std::fs::create_dir_all(sb.store()).unwrap();
    sb.caf(&["sync"]).ok();
    let db = format!("sqlite://{}", sb.store().join(".caf/caf.db").display());
    let saved = save_parts(&sb, &[], &parts_with_secrets(), "exec_leaky")
        .ok()
        .json();
    let id = saved["id"].as_str().unwrap().to_string();

    // Files: the checkpoint, the index, everything under the store.
    let files = all_files(&sb.store());
    assert!(files.len() >= 2, "{files:?}");
    for (path, bytes) in &files {
        assert_no_secret_in(path, bytes);
    }
    // The database, every byte of it (the main file and any journal).
    let db_files: Vec<_> = files.iter().filter(|(p, _)| p.contains("caf.db")).collect();
    assert!(!db_files.is_empty());
    for (path, bytes) in &db_files {
        assert_no_secret_in(path, bytes);
    }
    assert!(
        db_files
            .iter()
            .any(|(_, b)| contains(b, "[REDACTED:openai_key]")),
        "the database holds the markers"
    );

    // What is there instead: a marker of each kind, and the count.
    let doc = checkpoint_file(&sb, &id);
    let text = doc.to_string();
    for (kind, _) in secrets() {
        assert!(text.contains(&format!("[REDACTED:{kind}]")), "{kind}");
    }
    for kind in ["password", "api_key", "secret", "token"] {
        assert!(text.contains(&format!("[REDACTED:{kind}]")), "{kind}");
    }
    assert_eq!(doc["metadata"]["extensions"]["redactions"], REPLACED);
    assert_eq!(doc["snapshot"]["context"]["variables"]["step"], 3);
    assert_eq!(
        doc["snapshot"]["thought_chain"]["thoughts"][1]["content"],
        "nothing secret here"
    );
    sb.caf(&["validate", &sb.store_str()]).ok();
    sb.caf(&["--db", &db, "verify"]).ok();

    // The database copy loads as the file does.
    let from_db = sb
        .caf(&["--db", &db, "--no-files", "--json", "export", &id])
        .ok();
    assert_eq!(
        from_db.stdout,
        std::fs::read(sb.path_of(&id)).unwrap(),
        "file and database agree"
    );

    // Exports: stdout and a file.
    let out = sb.caf(&["export", &id]).ok();
    assert_no_secret_in("export to stdout", &out.stdout);
    let exported = sb.path().join("out.json");
    sb.caf(&["export", &id, "-o", s(&exported)]).ok();
    assert_no_secret_in("export to a file", &std::fs::read(&exported).unwrap());
    // Listing, inspecting and diffing show what the store holds: nothing secret.
    for args in [
        vec!["--json", "inspect", &id],
        vec!["--json", "list"],
        vec!["--json", "diff", &id],
    ] {
        let out = sb.caf(&args);
        assert_no_secret_in(&out.what, &out.stdout);
    }
}

#[test]
fn a_checkpoint_without_secrets_is_saved_as_it_is_and_uncounted() {
    let sb = Sandbox::new();
    let parts = json!({"agent_id": "a", "context": {"variables": {"tokens_used": 5, "max_tokens": 9},
        "state": {}, "history": ["the task-force met"]}});
    let id = save_parts(&sb, &[], &parts, "exec_clean").ok().json()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let doc = checkpoint_file(&sb, &id);
    assert!(doc["metadata"].get("extensions").is_none(), "{doc}");
    assert_eq!(doc["snapshot"]["context"]["variables"]["tokens_used"], 5);
    assert_eq!(
        doc["snapshot"]["context"]["history"][0],
        "the task-force met"
    );
}

#[test]
fn caf_toml_adds_patterns_and_opts_out_per_key_and_per_pattern() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.store()).unwrap();
    std::fs::write(
        sb.store().join("caf.toml"),
        r#"
[redaction]
keys = ["session_id"]
allow_keys = ["fixture_token"]
allow_patterns = ["jwt"]

[[redaction.patterns]]
kind = "employee_id"
regex = "EMP-[0-9]{6}"
"#,
    )
    .unwrap();
    let jwt = secrets().into_iter().find(|(k, _)| *k == "jwt").unwrap().1;
    let parts = json!({"agent_id": "a", "context": {"variables": {
        "who": "EMP-123456 asked", "sessionId": "s-42", "fixture_token": "tok-kept",
        "example_jwt": jwt, "password": PASSWORD}, "state": {}, "history": []}});
    let id = save_parts(&sb, &[], &parts, "exec_rules").ok().json()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let doc = checkpoint_file(&sb, &id);
    let vars = &doc["snapshot"]["context"]["variables"];
    assert_eq!(vars["who"], "[REDACTED:employee_id] asked");
    assert_eq!(vars["sessionId"], "[REDACTED:session_id]");
    assert_eq!(vars["fixture_token"], "tok-kept", "opted out by key");
    assert_eq!(vars["example_jwt"], jwt.as_str(), "opted out by pattern");
    assert_eq!(
        vars["password"], "[REDACTED:password]",
        "the rest still applies"
    );
    assert_eq!(doc["metadata"]["extensions"]["redactions"], 3);
}

#[test]
fn redaction_is_off_only_when_caf_toml_says_so() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.store()).unwrap();
    std::fs::write(
        sb.store().join("caf.toml"),
        "[redaction]\nenabled = false\n",
    )
    .unwrap();
    let id = save_parts(&sb, &[], &parts_with_secrets(), "exec_off")
        .ok()
        .json()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let bytes = std::fs::read(sb.path_of(&id)).unwrap();
    assert!(contains(&bytes, PASSWORD), "kept: redaction was turned off");
    assert!(checkpoint_file(&sb, &id)["metadata"]
        .get("extensions")
        .is_none());
    // Exporting still redacts by the directory's rules... which say off: the export is faithful.
    let out = sb.caf(&["export", &id]).ok();
    assert!(contains(&out.stdout, PASSWORD));

    // Turned back on, an export of the old checkpoint replaces the secrets on the way out.
    std::fs::write(sb.store().join("caf.toml"), "[redaction]\n").unwrap();
    let out = sb.caf(&["export", &id]).ok();
    assert_no_secret_in("export", &out.stdout);
    assert!(
        out.err()
            .contains(&format!("{REPLACED} secrets redacted on the way out")),
        "{}",
        out.describe()
    );
    let exported = sb.path().join("exported.json");
    std::fs::write(&exported, &out.stdout).unwrap();
    sb.caf(&["validate", s(&exported)]).ok();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["metadata"]["extensions"]["redactions"], REPLACED);
}

#[test]
fn a_bad_redaction_table_refuses_the_save_and_writes_nothing() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.store()).unwrap();
    for (toml, says) in [
        (
            "[redaction]\nallow_pattern = [\"jwt\"]\n",
            "unknown field `allow_pattern`",
        ),
        (
            "[[redaction.patterns]]\nkind = \"x\"\nregex = \"([a-z\"\n",
            "not a valid regular expression",
        ),
        (
            "[redaction]\nallow_patterns = [\"jwtt\"]\n",
            "no redaction pattern of kind \"jwtt\"",
        ),
    ] {
        std::fs::write(sb.store().join("caf.toml"), toml).unwrap();
        let out = save_parts(&sb, &[], &parts_with_secrets(), "exec_bad").fails(1);
        assert_eq!(out.errors().len(), 1, "{}", out.describe());
        assert!(out.err().contains("caf.toml"), "{}", out.describe());
        assert!(out.err().contains(says), "{}", out.describe());
        assert!(
            caf_tests::json_file_ids(&sb.store()).is_empty(),
            "nothing saved"
        );
        let out = sb.caf(&["export", "ckpt_x"]).fails(1);
        assert!(out.err().contains(says), "{}", out.describe());
    }
}

/// A checkpoint built by hand, with a secret in a variable.
fn hand_made(id: &str) -> Checkpoint {
    CheckpointBuilder::new(id)
        .execution("exec_lib")
        .agent("lib-agent")
        .variable("db_password", json!(PASSWORD))
        .build()
}

#[test]
fn a_library_user_saving_straight_into_any_store_is_redacted() {
    let dir = tempfile::tempdir().unwrap();
    let stores = FourStores::open(dir.path());
    for (name, store) in stores.each() {
        let c = hand_made("ckpt_lib");
        let summary = store.save(&c).unwrap();
        let back = store.load(&c.id).unwrap();
        assert_eq!(
            back.snapshot.context.variables["db_password"], "[REDACTED:password]",
            "{name}"
        );
        assert_eq!(back.metadata.redactions(), 1, "{name}");
        assert!(summary.bytes > 0);
        // Saved again (as a label change does), the count stays.
        let again = store.save(&back).unwrap();
        assert_eq!(again.id, back.id);
        assert_eq!(
            store.load(&c.id).unwrap().metadata.redactions(),
            1,
            "{name}"
        );
    }
    drop(stores);
    for (path, bytes) in all_files(dir.path()) {
        assert!(!contains(&bytes, PASSWORD), "{path}");
    }
}

#[test]
fn a_library_user_opts_out_explicitly() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = FileStore::open(dir.path()).unwrap();
    store.set_redaction(RedactionRules::disabled());
    let c = hand_made("ckpt_raw");
    store.save(&c).unwrap();
    let bytes = std::fs::read(store.path_of(&c.id)).unwrap();
    assert!(contains(&bytes, PASSWORD));
    let d = decode(&bytes, &Limits::default()).unwrap();
    assert_eq!(d.checkpoint, c, "saved exactly as given");

    let mut store = FileStore::open(dir.path().join("kept")).unwrap();
    store.set_redaction(RedactionRules::new().allow_key("db_password").unwrap());
    store.save(&c).unwrap();
    assert!(contains(
        &std::fs::read(store.path_of(&c.id)).unwrap(),
        PASSWORD
    ));
}

#[test]
fn a_database_url_password_is_never_printed() {
    let sb = Sandbox::new();
    let password = "Sup3rS3cretPw";
    for url in [
        format!("postgres://caf:{password}@127.0.0.1:1/test"),
        format!("postgres://caf:{password}%zz@127.0.0.1/test"),
        format!("postgres://caf:{password}@[::1/test"),
        format!("postgres://caf@127.0.0.1/test?password={password}%zz"),
        format!("postgresql://caf:{password}@127.0.0.1:99999/test"),
        format!("postgres://caf:pa%zz{password}@127.0.0.1/test?sslmode=require"),
    ] {
        for args in [
            vec!["--db", url.as_str(), "list"],
            vec!["--db", url.as_str(), "--no-files", "list"],
            vec!["--db", url.as_str(), "stats"],
            vec!["--db", url.as_str(), "--json", "sql", "SELECT 1"],
            vec!["--db", url.as_str(), "sync"],
        ] {
            let out = sb.caf(&args);
            let shown = format!("{}{}", out.out(), out.err());
            for piece in [password, "Sup3r", "S3cret", "cretPw"] {
                assert!(!shown.contains(piece), "{}: {shown}", out.what);
            }
        }
    }
    // With the URL from the environment, too.
    let url = format!("postgres://caf:{password}%zz@127.0.0.1/test");
    let out = sb.caf_plain(
        &["--dir", &sb.store_str(), "--no-files", "list"],
        &[("CAF_DATABASE_URL", url.as_str())],
    );
    assert!(out.code != 0);
    assert!(!out.err().contains(password), "{}", out.describe());
}

#[test]
fn no_secret_reaches_postgres() {
    let Some(base) = pg_base("no_secret_reaches_postgres") else {
        return;
    };
    let db = pg_database(&base);
    let sb = Sandbox::new();
    for pre in [vec!["--db", db.url(), "--no-files"], vec!["--db", db.url()]] {
        let saved = save_parts(&sb, &pre, &parts_with_secrets(), "exec_pg")
            .ok()
            .json();
        assert!(saved["id"].is_string());
    }
    let mut seen = 0;
    for table in [
        "executions",
        "lines",
        "checkpoints",
        "checkpoint_labels",
        "thoughts",
        "tool_calls",
        "steps",
        "entries",
    ] {
        let sql = format!("SELECT t::text FROM {table} t");
        let out = sb
            .caf(&["--db", db.url(), "--no-files", "--json", "sql", &sql])
            .ok();
        assert_no_secret_in(table, &out.stdout);
        seen += out.json()["rows"].as_array().unwrap().len();
    }
    assert!(seen > 10, "the tables hold the checkpoints ({seen} rows)");
    let rows = sb
        .caf(&[
            "--db",
            db.url(),
            "--no-files",
            "--json",
            "sql",
            "SELECT count(*) FROM thoughts WHERE content LIKE '%[REDACTED:openai_key]%'",
        ])
        .ok()
        .json();
    assert_ne!(rows["rows"][0][0], 0, "{rows}");
}
