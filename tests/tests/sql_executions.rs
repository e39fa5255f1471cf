//! The `executions` row follows its newest checkpoint whatever the order of the saves (agent,
//! status, task, times), on SQLite and (with `CAF_TEST_POSTGRES_URL`) PostgreSQL. A save
//! updates the row in one statement when the agent and status stay, and in full otherwise.

#![allow(clippy::unwrap_used)]

mod sql_common;

use caf_core::format::CheckpointReason;
use caf_core::ExecutionStatus;
use caf_sql::ExecutionStats;
use caf_tests::gen::{at_ms, CheckpointBuilder};
use serde_json::json;
use sql_common::{on_each_backend, TempSql};

fn execution(db: &TempSql) -> ExecutionStats {
    let stats = db.stats(None).unwrap();
    assert_eq!(stats.executions.len(), 1);
    stats.executions.into_iter().next().unwrap()
}

fn checkpoint(id: &str, ms: i64, agent: &str, reason: CheckpointReason) -> CheckpointBuilder {
    CheckpointBuilder::new(id)
        .execution("exec_x")
        .agent(agent)
        .at_ms(ms)
        .reason(reason)
}

#[test]
fn the_execution_row_follows_its_newest_checkpoint_in_any_order() {
    on_each_backend("the_execution_row_follows", |db| {
        let c1 = checkpoint("ckpt_1", 1000, "agent_a", CheckpointReason::StepCompleted).build();
        db.save_checkpoint(&c1).unwrap();
        let e = execution(db);
        assert_eq!(
            (e.status, e.started_at),
            (ExecutionStatus::Running, at_ms(1000))
        );
        // Newer, same agent and status, a task.
        let c2 = checkpoint("ckpt_2", 2000, "agent_a", CheckpointReason::StepCompleted)
            .parent("ckpt_1")
            .with(|c| {
                c.snapshot
                    .context
                    .variables
                    .insert("task".into(), json!("the task"));
            })
            .build();
        db.save_checkpoint(&c2).unwrap();
        let e = execution(db);
        assert_eq!(e.last_checkpoint_id.as_deref(), Some("ckpt_2"));
        assert_eq!(e.task, "the task");
        // Newer, another agent and a finished status.
        let c3 = checkpoint("ckpt_3", 3000, "agent_b", CheckpointReason::Completed)
            .parent("ckpt_2")
            .build();
        db.save_checkpoint(&c3).unwrap();
        let e = execution(db);
        assert_eq!(
            (e.agent_id.as_str(), e.status, e.completed_at),
            ("agent_b", ExecutionStatus::Completed, Some(at_ms(3000)))
        );
        assert_eq!(e.last_checkpoint_id.as_deref(), Some("ckpt_3"));
        assert_eq!(e.task, "");
        // Older than all (saved last): only the start moves back.
        let c0 = checkpoint("ckpt_0", 500, "agent_c", CheckpointReason::Error).build();
        db.save_checkpoint(&c0).unwrap();
        let e = execution(db);
        assert_eq!(
            (e.agent_id.as_str(), e.status, e.started_at),
            ("agent_b", ExecutionStatus::Completed, at_ms(500))
        );
        assert_eq!(e.last_checkpoint_id.as_deref(), Some("ckpt_3"));
        // Newer again, running again: the status goes back and the end is cleared.
        let c4 = checkpoint("ckpt_4", 4000, "agent_b", CheckpointReason::StepCompleted)
            .parent("ckpt_3")
            .build();
        db.save_checkpoint(&c4).unwrap();
        let e = execution(db);
        assert_eq!(
            (e.status, e.completed_at, e.last_checkpoint_id.as_deref()),
            (ExecutionStatus::Running, None, Some("ckpt_4"))
        );
        // The same time as the newest, a greater id: it is the newest.
        let c5 = checkpoint("ckpt_5", 4000, "agent_b", CheckpointReason::Paused).build();
        db.save_checkpoint(&c5).unwrap();
        let e = execution(db);
        assert_eq!(
            (e.status, e.last_checkpoint_id.as_deref()),
            (ExecutionStatus::Paused, Some("ckpt_5"))
        );
    });
}
