//! The database schema, as diesel sees it.
//!
//! Written to match `migrations/{sqlite,postgres}/*/up.sql` exactly (what `diesel print-schema`
//! would produce); `tests/tests/sql_schema.rs` checks that the migrations create these tables and
//! columns, with these nullabilities and types, on both backends.

#![allow(missing_docs)]

diesel::table! {
    /// One row per execution: a summary kept up to date from its newest checkpoint.
    executions (id) {
        id -> Text,
        agent_id -> Text,
        task -> Text,
        started_at -> BigInt,
        completed_at -> Nullable<BigInt>,
        status -> Text,
        last_checkpoint_id -> Nullable<Text>,
        last_checkpoint_at -> Nullable<BigInt>,
    }
}

diesel::table! {
    /// A line: checkpoints of one execution, each the child of the previous one.
    lines (id) {
        id -> BigInt,
        execution_id -> Text,
        sealed -> Bool,
    }
}

diesel::table! {
    /// One row per checkpoint: its header, normalized, and the rest of its document as JSON.
    checkpoints (id) {
        id -> Text,
        parent_id -> Nullable<Text>,
        execution_id -> Text,
        agent_id -> Text,
        timestamp -> BigInt,
        version -> Text,
        step_number -> BigInt,
        reason -> Text,
        tokens_used -> BigInt,
        duration_ms -> BigInt,
        name -> Nullable<Text>,
        labels -> Text,
        integrity -> Text,
        bytes -> BigInt,
        line_id -> BigInt,
        seq -> BigInt,
        thought_count -> BigInt,
        call_count -> BigInt,
        step_count -> BigInt,
        exact -> Nullable<Text>,
        rest -> Text,
    }
}

diesel::table! {
    /// The labels of each checkpoint, one row per label, for filtering.
    checkpoint_labels (checkpoint_id, label) {
        checkpoint_id -> Text,
        label -> Text,
    }
}

diesel::table! {
    /// Revisions of thoughts, per line and position.
    thoughts (line_id, position, from_seq) {
        line_id -> BigInt,
        position -> BigInt,
        from_seq -> BigInt,
        to_seq -> Nullable<BigInt>,
        execution_id -> Text,
        id -> Text,
        first_checkpoint_id -> Text,
        #[sql_name = "type"]
        kind -> Text,
        content -> Text,
        confidence -> Nullable<Double>,
        parent_id -> Nullable<Text>,
        created_at -> BigInt,
        payload -> Text,
    }
}

diesel::table! {
    /// Revisions of tool calls, per line and position.
    tool_calls (line_id, position, from_seq) {
        line_id -> BigInt,
        position -> BigInt,
        from_seq -> BigInt,
        to_seq -> Nullable<BigInt>,
        execution_id -> Text,
        id -> Text,
        first_checkpoint_id -> Text,
        tool_id -> Text,
        args -> Text,
        result -> Nullable<Text>,
        success -> Nullable<Bool>,
        error -> Nullable<Text>,
        status -> Text,
        started_at -> Nullable<BigInt>,
        completed_at -> Nullable<BigInt>,
        payload -> Text,
    }
}

diesel::table! {
    /// Revisions of completed plan steps, per line and position.
    steps (line_id, position, from_seq) {
        line_id -> BigInt,
        position -> BigInt,
        from_seq -> BigInt,
        to_seq -> Nullable<BigInt>,
        execution_id -> Text,
        first_checkpoint_id -> Text,
        name -> Text,
        completed_at -> BigInt,
        payload -> Text,
    }
}

diesel::table! {
    /// Revisions of the entries of the snapshot's lists and maps, per line, part and position
    /// (keyed by line, then the seq that wrote them: the rows of one save are together).
    entries (line_id, from_seq, part, position) {
        line_id -> BigInt,
        part -> Text,
        position -> BigInt,
        from_seq -> BigInt,
        to_seq -> Nullable<BigInt>,
        execution_id -> Text,
        first_checkpoint_id -> Text,
        key -> Nullable<Text>,
        payload -> Text,
    }
}

diesel::table! {
    /// Tombstones of pruned checkpoints, so that lineage can bridge the gap a prune leaves.
    pruned (id) {
        id -> Text,
        parent_id -> Nullable<Text>,
        execution_id -> Text,
        timestamp -> BigInt,
        pruned_at -> BigInt,
    }
}

diesel::table! {
    /// Checkpoint files a hybrid store wrote without flushing them (see `HybridStore`): the
    /// files to check after a power loss.
    unflushed_files (writer, n) {
        writer -> BigInt,
        n -> BigInt,
        store_id -> Text,
        boot_id -> Text,
        checkpoint_id -> Text,
    }
}

diesel::table! {
    /// How far a journaled store's writer has written its journal slot (see
    /// `JournaledStore`): the records numbered below `applied` of `generation`.
    journal_slots (slot) {
        slot -> Text,
        generation -> BigInt,
        applied -> BigInt,
    }
}

diesel::joinable!(checkpoint_labels -> checkpoints (checkpoint_id));
diesel::joinable!(entries -> lines (line_id));
diesel::joinable!(checkpoints -> executions (execution_id));
diesel::joinable!(checkpoints -> lines (line_id));
diesel::joinable!(lines -> executions (execution_id));
diesel::joinable!(steps -> lines (line_id));
diesel::joinable!(thoughts -> lines (line_id));
diesel::joinable!(tool_calls -> lines (line_id));

diesel::allow_tables_to_appear_in_same_query!(
    checkpoint_labels,
    checkpoints,
    entries,
    executions,
    lines,
    steps,
    thoughts,
    tool_calls,
);
