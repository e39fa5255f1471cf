//! PostgreSQL faults: the server restarted and backends terminated while writers save.

/// Tests that use the PostgreSQL server take turns: one of them restarts it.
pub(crate) static SERVER: std::sync::Mutex<()> = std::sync::Mutex::new(());
