//! [`ScratchDatabase`]: a throw-away PostgreSQL database, for benchmarks and tests.

use crate::error::{Result, SqlError};
use crate::Backend;
use diesel::connection::SimpleConnection;
use diesel::Connection;

/// A fresh PostgreSQL database (`caf_scratch_<random>`) on the server of a base URL, dropped —
/// with any connections still open to it — when this value is dropped. Creating it needs the
/// `CREATEDB` privilege.
#[derive(Debug)]
pub struct ScratchDatabase {
    admin_url: String,
    name: String,
    url: String,
}

/// `url` with its database name replaced by `db` (query parameters kept).
pub fn with_database(url: &str, db: &str) -> String {
    let (base, query) = match url.find('?') {
        Some(q) => (&url[..q], &url[q..]),
        None => (url, ""),
    };
    let scheme_end = base.find("://").map_or(0, |i| i + 3);
    let path_start = base[scheme_end..]
        .find('/')
        .map_or(base.len(), |i| scheme_end + i);
    format!("{}/{db}{query}", &base[..path_start])
}

impl ScratchDatabase {
    /// Creates the database on the server of `base` (a `postgres://` URL).
    pub fn create(base: &str) -> Result<Self> {
        let name = format!("caf_scratch_{:016x}", rand_u64());
        let connect = |e| SqlError::connect(Backend::Postgres, base, e);
        let mut admin = diesel::PgConnection::establish(base).map_err(connect)?;
        admin
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .map_err(|source| SqlError::Query {
                backend: Backend::Postgres,
                context: format!("creating the scratch database {name}"),
                source,
            })?;
        Ok(Self {
            admin_url: base.to_string(),
            url: with_database(base, &name),
            name,
        })
    }

    /// The URL of the scratch database.
    pub fn url(&self) -> &str {
        &self.url
    }
}

impl Drop for ScratchDatabase {
    fn drop(&mut self) {
        if let Ok(mut admin) = diesel::PgConnection::establish(&self.admin_url) {
            let _ = admin.batch_execute(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ));
        }
    }
}

/// A random number from the standard library's hasher seeds (no extra dependency).
fn rand_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::with_database;

    #[test]
    fn replaces_the_database_name() {
        assert_eq!(
            with_database("postgres://u@h:5432/test", "x"),
            "postgres://u@h:5432/x"
        );
        assert_eq!(
            with_database("postgres://u@h/test?sslmode=disable", "x"),
            "postgres://u@h/x?sslmode=disable"
        );
        assert_eq!(with_database("postgres://u@h", "x"), "postgres://u@h/x");
    }
}
