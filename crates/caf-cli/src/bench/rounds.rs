//! `caf bench --peer … --rounds N`: caf's modes and the peer measured N times, alternately, and
//! the spread of each ratio over the rounds.
//!
//! One run sets caf beside the peer measured a minute later; on a disk whose flush moves by half
//! from one minute to the next (docs/benchmarks.md), one run's ratio moves with it. Rounds that
//! alternate which side goes first (caf in the odd rounds, the peer in the even ones) put each
//! side as often before the other as after it, and the median over the rounds, with the least
//! and the greatest, says how far one run's ratio can be trusted. Each round's stores are in a
//! scratch directory of their own, kept until the run ends ([`round_dir`]). With
//! `--concurrent`, the same for the saves per second of N writers ([`run_concurrent`]).

use super::concurrent::{peer_saves_per_s, ConcurrentReport};
use super::peer::ratio;
use super::peer::{shown, verdict, PeerFigures, PeerRun, SideBySide};
use super::stats::median;
use super::{label, measure_concurrent, measure_modes, mode_name, run_peer};
use super::{BenchArgs, Figures, Mode};
use crate::output::{self, Table};
use crate::{CmdResult, Failure};
use anstyle::Style;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// What one round measured.
struct Round {
    caf: Vec<Figures>,
    peer: PeerFigures,
    peer_async: Option<PeerFigures>,
}

/// One round in the JSON report: the side-by-side report of a single run, and its order.
#[derive(Serialize)]
struct RoundReport<'a> {
    /// From 1.
    round: u32,
    /// Whether the peer ran before caf's modes in this round.
    peer_first: bool,
    #[serde(flatten)]
    side: SideBySide<'a>,
}

/// A ratio over the rounds.
#[derive(Debug, Serialize, PartialEq)]
struct Spread {
    /// The median (of an even count, the upper of the two middle values).
    median: f64,
    min: f64,
    max: f64,
}

impl Spread {
    /// `None` for no values.
    fn of(mut values: Vec<f64>) -> Option<Self> {
        let min = values.iter().copied().reduce(f64::min)?;
        let max = values.iter().copied().reduce(f64::max)?;
        Some(Self {
            median: median(&mut values),
            min,
            max,
        })
    }
}

/// One mode's ratios (caf / peer: below 1, caf is faster) over the rounds.
#[derive(Serialize)]
struct ModeSpread {
    mode: Mode,
    /// The mode's label: its name, and `async` for the async durability.
    label: String,
    save: Spread,
    /// Only when the peer reported the page floor of its own loop in every round.
    #[serde(skip_serializing_if = "Option::is_none")]
    save_in_page_floors: Option<Spread>,
    restore: Spread,
    list: Spread,
}

/// `caf bench --peer … --rounds N --json`.
#[derive(Serialize)]
struct RoundsReport<'a> {
    rounds: Vec<RoundReport<'a>>,
    /// Half the peer's save over the page floor of its own loop, over the rounds: below 1, no
    /// durable save could have been twice as fast as the peer's.
    peer_half_save_over_page_floor: Spread,
    /// Each mode's ratios over the rounds.
    spread: Vec<ModeSpread>,
}

/// A scratch directory of its own for a round, under `scratch`, kept in `kept` (removed with the
/// run's scratch directory when the run ends, as a single run's stores are). Not removed when the
/// round ends: on the benchmark machine's ext4 (mounted with `discard`), deleting the hundreds of
/// MB a round leaves made the files written in the rounds after it much slower (the floor with
/// files fell from 4,532 to 960–1,245 saves per second, docs/benchmarks.md).
fn round_dir(scratch: &Path, kept: &mut Vec<tempfile::TempDir>) -> Result<PathBuf, Failure> {
    let dir = tempfile::Builder::new()
        .prefix("round-")
        .tempdir_in(scratch)
        .map_err(|e| Failure::msg(format!("{}: {e}", scratch.display())))?;
    let path = dir.path().to_path_buf();
    kept.push(dir);
    Ok(path)
}

/// Runs `measure` for each of `rounds` rounds, in a directory of its own ([`round_dir`]), with
/// whether the peer goes first (in the even rounds): each round's result and that order, and
/// the directories, to keep until the figures are printed.
#[allow(clippy::type_complexity)]
fn each_round<T>(
    rounds: u32,
    scratch: &Path,
    json: bool,
    mut measure: impl FnMut(&Path, bool) -> Result<T, Failure>,
) -> Result<(Vec<(T, bool)>, Vec<tempfile::TempDir>), Failure> {
    let mut out = Vec::new();
    let mut kept = Vec::new();
    for i in 0..rounds {
        let peer_first = i % 2 == 1;
        if !json {
            eprintln!(
                "round {} of {rounds}{} …",
                i + 1,
                if peer_first { ", the peer first" } else { "" }
            );
        }
        let dir = round_dir(scratch, &mut kept)?;
        out.push((measure(&dir, peer_first)?, peer_first));
    }
    Ok((out, kept))
}

/// Measures `rounds` rounds (see the module docs) and prints them, with the spread.
pub(super) fn run(
    modes: &[Mode],
    a: &BenchArgs,
    scratch: &Path,
    pg: Option<&str>,
    peer: &PeerRun,
    json: bool,
) -> CmdResult {
    let (rounds, _kept) = each_round(a.rounds, scratch, json, |dir, peer_first| {
        let (caf, (peer, peer_async)) = if peer_first {
            let p = run_peer(peer, a, dir, json)?;
            (measure_modes(modes, a, dir, pg, json)?, p)
        } else {
            let c = measure_modes(modes, a, dir, pg, json)?;
            (c, run_peer(peer, a, dir, json)?)
        };
        Ok(Round {
            caf,
            peer,
            peer_async,
        })
    })?;
    let sides: Vec<SideBySide<'_>> = rounds
        .iter()
        .map(|(r, _)| SideBySide::new(&r.caf, &r.peer, r.peer_async.as_ref()))
        .collect();
    let spread = spread(&sides);
    let half = Spread::of(
        sides
            .iter()
            .map(|s| s.peer_half_save_over_page_floor)
            .collect(),
    )
    .ok_or_else(|| Failure::msg("no round was measured"))?;
    if !json {
        print(&rounds, &sides, &spread, &half);
        return Ok(());
    }
    let report = RoundsReport {
        rounds: sides
            .into_iter()
            .zip(&rounds)
            .zip(1..)
            .map(|((side, (_, peer_first)), round)| RoundReport {
                round,
                peer_first: *peer_first,
                side,
            })
            .collect(),
        peer_half_save_over_page_floor: half,
        spread,
    };
    output::print_json(&report);
    Ok(())
}

/// Each mode's ratios over the rounds (every round measured the same modes, in order).
fn spread(sides: &[SideBySide<'_>]) -> Vec<ModeSpread> {
    let Some(first) = sides.first() else {
        return Vec::new();
    };
    let column = |i: usize, of: fn(&super::peer::Ratio) -> f64| -> Vec<f64> {
        sides.iter().map(|s| of(&s.ratios[i])).collect()
    };
    first
        .caf
        .iter()
        .enumerate()
        .filter_map(|(i, f)| {
            let in_page_floors: Option<Vec<f64>> = sides
                .iter()
                .map(|s| s.ratios[i].save_in_page_floors)
                .collect();
            Some(ModeSpread {
                mode: f.mode,
                label: label(f),
                save: Spread::of(column(i, |r| r.save))?,
                save_in_page_floors: in_page_floors.and_then(Spread::of),
                restore: Spread::of(column(i, |r| r.restore))?,
                list: Spread::of(column(i, |r| r.list))?,
            })
        })
        .collect()
}

/// Which side a round measured first, as the tables say it.
fn first(peer_first: bool) -> &'static str {
    if peer_first {
        "langgraph"
    } else {
        "caf"
    }
}

/// `0.61 (caf 1.63x faster), 0.57–0.80`.
fn spread_text(s: &Spread) -> String {
    format!("{}, {}–{}", verdict(s.median), shown(s.min), shown(s.max))
}

fn print(rounds: &[(Round, bool)], sides: &[SideBySide<'_>], spread: &[ModeSpread], half: &Spread) {
    let plain = Style::new();
    crate::say!();
    crate::say!(
        "{} rounds side by side with LangGraph's SqliteSaver, alternating which goes first; \
         caf / LangGraph, medians per operation in each round (below 1, caf is faster):",
        rounds.len()
    );
    let mut table = Table::new(&[
        "ROUND",
        "FIRST",
        "MODE",
        "SAVE",
        "SAVE IN PAGE FLOORS",
        "RESTORE-LATEST",
        "LIST",
    ]);
    for (((_, peer_first), side), n) in rounds.iter().zip(sides).zip(1..) {
        for (f, ratio) in side.caf.iter().zip(&side.ratios) {
            let mut row = vec![
                (format!("{n}"), plain),
                (first(*peer_first).into(), plain),
                (label(f), plain),
            ];
            row.extend(ratio.cells().map(|c| (c, plain)));
            table.row(row);
        }
    }
    table.print();
    crate::say!();
    crate::say!("over the rounds: the median, then the least and the greatest ratio");
    let mut over = Table::new(&[
        "MODE",
        "SAVE",
        "SAVE IN PAGE FLOORS",
        "RESTORE-LATEST",
        "LIST",
    ]);
    for m in spread {
        over.row(vec![
            (m.label.clone(), plain),
            (spread_text(&m.save), plain),
            (
                m.save_in_page_floors
                    .as_ref()
                    .map_or("-".into(), spread_text),
                plain,
            ),
            (spread_text(&m.restore), plain),
            (spread_text(&m.list), plain),
        ]);
    }
    over.print();
    crate::say!(
        "half LangGraph's save over the page floor of its own loop: {:.2} ({:.2}–{:.2}); \
         below 1, no durable save could have been twice as fast. --json has every round's \
         figures.",
        half.median,
        half.min,
        half.max
    );
}

/// One `--concurrent` round in the JSON report.
#[derive(Serialize)]
struct ConcurrentRoundReport<'a> {
    /// From 1.
    round: u32,
    /// Whether the peer's writers ran before caf's in this round.
    peer_first: bool,
    #[serde(flatten)]
    report: ConcurrentReport<'a>,
}

/// One mode's saves per second over the peer's (above 1, caf saves more), over the rounds.
#[derive(Serialize)]
struct ConcurrentSpread {
    mode: Mode,
    saves_per_s: Spread,
}

/// `caf bench --concurrent N --peer … --rounds K --json`.
#[derive(Serialize)]
struct ConcurrentRoundsReport<'a> {
    rounds: Vec<ConcurrentRoundReport<'a>>,
    /// Each mode's ratio over the rounds.
    spread: Vec<ConcurrentSpread>,
    /// The floor of appends and checksummed files, over the peer's saves per second, over the
    /// rounds in which it was measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    floor_with_checksums: Option<Spread>,
}

/// `--concurrent N --rounds K`: K rounds of N writers per mode and of the peer's N writers,
/// alternating which goes first.
pub(super) fn run_concurrent(
    modes: &[Mode],
    processes: u32,
    a: &BenchArgs,
    scratch: &Path,
    pg: Option<&str>,
    peer: &PeerRun,
    json: bool,
) -> CmdResult {
    let (rounds, _kept) = each_round(a.rounds, scratch, json, |dir, peer_first| {
        measure_concurrent(
            modes,
            processes,
            a.saves,
            dir,
            pg,
            Some(peer),
            peer_first,
            json,
        )
    })?;
    // Each round's report, with its ratios, made once for the spread, the JSON and the table.
    let reports: Vec<ConcurrentReport<'_>> = rounds.iter().map(|(r, _)| r.report()).collect();
    let spread: Vec<ConcurrentSpread> = modes
        .iter()
        .enumerate()
        .filter_map(|(i, &mode)| {
            let each = reports.iter().map(|r| r.ratios[i].saves_per_s).collect();
            Some(ConcurrentSpread {
                mode,
                saves_per_s: Spread::of(each)?,
            })
        })
        .collect();
    let peer_rate = |r: &ConcurrentReport<'_>| r.peer.map_or(0.0, peer_saves_per_s);
    let floors: Vec<f64> = reports
        .iter()
        .filter_map(|r| {
            let floor = r.floor_with_checksums?;
            Some(ratio(floor.saves_per_s, peer_rate(r)))
        })
        .collect();
    let floor_with_checksums = Spread::of(floors);
    if json {
        output::print_json(&ConcurrentRoundsReport {
            rounds: reports
                .into_iter()
                .zip(&rounds)
                .zip(1..)
                .map(|((report, (_, peer_first)), round)| ConcurrentRoundReport {
                    round,
                    peer_first: *peer_first,
                    report,
                })
                .collect(),
            spread,
            floor_with_checksums,
        });
        return Ok(());
    }
    let plain = Style::new();
    crate::say!();
    crate::say!(
        "{} rounds of {} writers, caf's and LangGraph's, alternating which goes first; saves \
         per second, and caf's over LangGraph's (above 1, caf saves more):",
        rounds.len(),
        processes
    );
    let mut table = Table::new(&[
        "ROUND",
        "FIRST",
        "MODE",
        "SAVES/S",
        "LANGGRAPH SAVES/S",
        "CAF / LANGGRAPH",
        "LOST",
        "ERRORS",
    ]);
    for (((_, peer_first), report), n) in rounds.iter().zip(&reports).zip(1..) {
        for (f, r) in report.caf.iter().zip(&report.ratios) {
            table.row(vec![
                (format!("{n}"), plain),
                (first(*peer_first).into(), plain),
                (mode_name(f.mode), plain),
                (format!("{:.0}", f.saves_per_s), plain),
                (format!("{:.0}", peer_rate(report)), plain),
                (format!("{:.2}", r.saves_per_s), plain),
                (f.lost.to_string(), plain),
                (f.errors.to_string(), plain),
            ]);
        }
    }
    table.print();
    for m in &spread {
        crate::say!(
            "{}: caf / LangGraph {:.2} over the rounds ({:.2}–{:.2})",
            mode_name(m.mode),
            m.saves_per_s.median,
            m.saves_per_s.min,
            m.saves_per_s.max
        );
    }
    if let Some(f) = &floor_with_checksums {
        crate::say!(
            "the floor of appends and checksummed files saved {:.2} times as many per second as \
             LangGraph ({:.2}–{:.2}). --json has every round's figures and the other floors.",
            f.median,
            f.min,
            f.max
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spread_is_the_median_least_and_greatest() {
        assert_eq!(Spread::of(Vec::new()), None);
        assert_eq!(
            Spread::of(vec![0.8, 0.5, 0.6]),
            Some(Spread {
                median: 0.6,
                min: 0.5,
                max: 0.8
            })
        );
        // An even count: the upper of the two middle values.
        assert_eq!(Spread::of(vec![0.4, 0.9]).map(|s| s.median), Some(0.9));
    }
}
