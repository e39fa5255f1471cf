//! The structural walk over two JSON values that yields [`Change`]s at JSON Pointer paths.
//!
//! Objects are compared member by member; arrays element by element, by index (extra elements
//! at the end are added or removed). Equal subtrees are skipped with one `==`, so walking two
//! equal values costs one comparison.

use super::text;
use super::types::{Change, Op};
use serde_json::{Map, Value};

/// Appends the reference token `token` to the JSON Pointer `path` (escaping `~` and `/`).
pub fn push_token(path: &mut String, token: &str) {
    path.push('/');
    if token.contains(['~', '/']) {
        path.push_str(&token.replace('~', "~0").replace('/', "~1"));
    } else {
        path.push_str(token);
    }
}

/// Appends an array index to `path`.
fn push_index(path: &mut String, i: usize) {
    use std::fmt::Write;
    let _ = write!(path, "/{i}");
}

/// The change at `path` from `old` to `new` (either may be absent, not both).
pub fn change(path: &str, old: Option<&Value>, new: Option<&Value>) -> Change {
    let op = match (old, new) {
        (None, _) => Op::Added,
        (_, None) => Op::Removed,
        _ => Op::Changed,
    };
    let text_diff = match (old, new) {
        (Some(Value::String(a)), Some(Value::String(b))) => text::unified(a, b),
        _ => None,
    };
    Change {
        path: path.to_string(),
        op,
        old: old.cloned(),
        new: new.cloned(),
        text_diff,
    }
}

/// Records every difference between `old` and `new`, which sit at `path`.
pub fn values(old: &Value, new: &Value, path: &mut String, out: &mut Vec<Change>) {
    if old == new {
        return;
    }
    match (old, new) {
        (Value::Object(a), Value::Object(b)) => objects(a, b, path, out),
        (Value::Array(a), Value::Array(b)) => arrays(a, b, path, out),
        _ => out.push(change(path, Some(old), Some(new))),
    }
}

/// Records the differences between two optional values at `path`: a value that appears is
/// added, one that goes is removed, two are walked.
pub fn options(old: Option<&Value>, new: Option<&Value>, path: &mut String, out: &mut Vec<Change>) {
    match (old, new) {
        (Some(a), Some(b)) => values(a, b, path, out),
        (None, None) => {}
        _ => out.push(change(path, old, new)),
    }
}

/// Records the differences between two objects at `path`: members of `old` in its order
/// (changed or removed), then members only in `new` (added).
pub fn objects(
    old: &Map<String, Value>,
    new: &Map<String, Value>,
    path: &mut String,
    out: &mut Vec<Change>,
) {
    if old == new {
        return;
    }
    let len = path.len();
    for (k, a) in old {
        push_token(path, k);
        match new.get(k) {
            Some(b) => values(a, b, path, out),
            None => out.push(change(path, Some(a), None)),
        }
        path.truncate(len);
    }
    for (k, b) in new {
        if !old.contains_key(k) {
            push_token(path, k);
            out.push(change(path, None, Some(b)));
            path.truncate(len);
        }
    }
}

/// Records the differences between two arrays at `path`, element by element.
pub fn arrays(old: &[Value], new: &[Value], path: &mut String, out: &mut Vec<Change>) {
    if old == new {
        return;
    }
    let len = path.len();
    for i in 0..old.len().max(new.len()) {
        push_index(path, i);
        options(old.get(i), new.get(i), path, out);
        path.truncate(len);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn walk(a: Value, b: Value) -> Vec<(String, Op)> {
        let mut out = Vec::new();
        values(&a, &b, &mut String::new(), &mut out);
        out.into_iter().map(|c| (c.path, c.op)).collect()
    }

    #[test]
    fn equal_values_have_no_changes() {
        let v = json!({"a": [1, {"b": null}], "c": "x"});
        assert!(walk(v.clone(), v).is_empty());
    }

    #[test]
    fn nested_paths_and_escaping() {
        let a = json!({"a": {"b": [1, 2, 3]}, "x/y": 1, "t~": 1, "gone": true});
        let b = json!({"a": {"b": [1, 5]}, "x/y": 2, "t~": 1, "new": false});
        assert_eq!(
            walk(a, b),
            vec![
                ("/a/b/1".to_string(), Op::Changed),
                ("/a/b/2".to_string(), Op::Removed),
                ("/gone".to_string(), Op::Removed),
                ("/x~1y".to_string(), Op::Changed),
                ("/new".to_string(), Op::Added),
            ]
        );
        let mut p = String::new();
        push_token(&mut p, "~/");
        assert_eq!(p, "/~0~1");
    }

    #[test]
    fn a_change_of_type_is_one_change() {
        assert_eq!(
            walk(json!({"a": [1]}), json!({"a": {"0": 1}})),
            vec![("/a".to_string(), Op::Changed)]
        );
        assert_eq!(
            walk(json!(1), json!("1")),
            vec![(String::new(), Op::Changed)]
        );
    }
}
