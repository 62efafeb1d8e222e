//! The weak-scaling figure of a multi-process Legion run (`scripts/weak-scaling.sh`): per
//! app, time per iteration of the fused and unfused program at each process count, and the
//! bytes moved between nodes per iteration; medians over the repetitions.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::bail;
use plotters::prelude::*;

use crate::records::{median_of, Record};

/// Medians of the repetitions of one (app, processes, fusion) configuration.
#[derive(Debug, Clone, Copy, Default)]
pub struct Median {
    n: usize,
    seconds: f64,
    bytes: f64,
    runs: usize,
}

/// (app, processes, fusion).
pub type Key = (String, usize, String);

/// Medians per (app, processes, fusion); every record must be an app's (with `fusion`).
pub fn medians(records: &[Record]) -> anyhow::Result<BTreeMap<Key, Median>> {
    let mut groups: BTreeMap<Key, Vec<&Record>> = BTreeMap::new();
    for r in records {
        let Some(fusion) = r.fusion.clone() else {
            bail!("a record of {} has no `fusion`: not an app's record", r.app);
        };
        groups
            .entry((r.app.clone(), r.nodes, fusion))
            .or_default()
            .push(r);
    }
    Ok(groups
        .into_iter()
        .map(|(key, rs)| {
            let m = Median {
                n: rs[0].n,
                seconds: median_of(&rs, |r| r.seconds_per_iter),
                bytes: median_of(&rs, |r| r.bytes_moved_per_iter),
                runs: rs.len(),
            };
            (key, m)
        })
        .collect())
}

/// The table: one row per (app, processes).
pub fn markdown(table: &BTreeMap<Key, Median>) -> String {
    let mut out = String::from(
        "| app | processes | n | fused ms/iter | unfused ms/iter | unfused / fused | \
         fused efficiency | bytes moved/iter (fused) | runs |\n\
         |---|---|---|---|---|---|---|---|---|\n",
    );
    let mut rows: BTreeMap<(String, usize), (Option<Median>, Option<Median>)> = BTreeMap::new();
    for ((app, nodes, fusion), m) in table {
        let row = rows.entry((app.clone(), *nodes)).or_default();
        if fusion == "on" {
            row.0 = Some(*m);
        } else {
            row.1 = Some(*m);
        }
    }
    for ((app, nodes), (fused, unfused)) in &rows {
        let ms = |m: &Option<Median>| m.map_or("–".into(), |m| format!("{:.2}", m.seconds * 1e3));
        let ratio = match (fused, unfused) {
            (Some(f), Some(u)) if f.seconds > 0.0 => format!("{:.2}", u.seconds / f.seconds),
            _ => "–".into(),
        };
        // Weak-scaling efficiency: the one-process time over this one (1 is perfect).
        let efficiency = match (rows.get(&(app.clone(), 1)).and_then(|r| r.0), fused) {
            (Some(one), Some(f)) if f.seconds > 0.0 => format!("{:.2}", one.seconds / f.seconds),
            _ => "–".into(),
        };
        let any = fused.or(*unfused).unwrap_or_default();
        out.push_str(&format!(
            "| {app} | {nodes} | {} | {} | {} | {ratio} | {efficiency} | {} | {} |\n",
            any.n,
            ms(fused),
            ms(unfused),
            fused.map_or("–".into(), |m| format!("{:.0}", m.bytes)),
            fused.map_or(0, |m| m.runs) + unfused.map_or(0, |m| m.runs),
        ));
    }
    out
}

/// The figure: per app, time per iteration against processes (fused, unfused) above, bytes
/// moved per iteration below.
pub fn figure(table: &BTreeMap<Key, Median>, path: &Path) -> anyhow::Result<()> {
    let apps: Vec<String> = {
        let mut a: Vec<String> = table.keys().map(|k| k.0.clone()).collect();
        a.dedup();
        a
    };
    if apps.is_empty() {
        bail!("no records to plot");
    }
    let max_nodes = table.keys().map(|k| k.1).max().unwrap_or(1) as f64;
    let root = SVGBackend::new(path, (420 * apps.len() as u32, 640)).into_drawing_area();
    root.fill(&WHITE)?;
    let (upper, lower) = root.split_vertically(360);
    let series = |app: &str, fusion: &str, value: fn(&Median) -> f64| -> Vec<(f64, f64)> {
        table
            .iter()
            .filter(|(k, _)| k.0 == app && k.2 == fusion)
            .map(|(k, m)| (k.1 as f64, value(m)))
            .collect()
    };
    let x_range = 0.5..max_nodes + 0.5;
    // One label per node count, up to what an axis can show.
    let x_labels = (max_nodes as usize).saturating_add(2).min(MAX_X_LABELS);
    for (area, app) in upper.split_evenly((1, apps.len())).iter().zip(&apps) {
        let fused = series(app, "on", |m| m.seconds * 1e3);
        let unfused = series(app, "off", |m| m.seconds * 1e3);
        let top = axis_top(app, "ms per iteration", fused.iter().chain(&unfused), 1.15)?;
        let mut chart = ChartBuilder::on(area)
            .caption(format!("{app}: ms per iteration"), ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(35)
            .y_label_area_size(55)
            .build_cartesian_2d(x_range.clone(), 0.0..top.max(1e-3))?;
        chart
            .configure_mesh()
            .x_desc("processes (one core each)")
            .x_labels(x_labels)
            .x_label_formatter(&|x| format!("{x:.0}"))
            .draw()?;
        for (points, color, label) in [(&fused, BLUE, "fused"), (&unfused, RED, "unfused")] {
            chart
                .draw_series(LineSeries::new(
                    points.iter().copied(),
                    color.stroke_width(2),
                ))?
                .label(label)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color));
            chart.draw_series(points.iter().map(|&p| Circle::new(p, 4, color.filled())))?;
        }
        chart
            .configure_series_labels()
            .border_style(BLACK)
            .background_style(WHITE.mix(0.8))
            .draw()?;
    }
    for (area, app) in lower.split_evenly((1, apps.len())).iter().zip(&apps) {
        let moved = series(app, "on", |m| m.bytes / 1024.0);
        let top = axis_top(app, "KiB moved per iteration", moved.iter(), 1.2)?;
        let mut chart = ChartBuilder::on(area)
            .caption(
                format!("{app}: KiB moved between nodes per iteration"),
                ("sans-serif", 16),
            )
            .margin(12)
            .x_label_area_size(35)
            .y_label_area_size(55)
            .build_cartesian_2d(x_range.clone(), 0.0..top.max(1.0))?;
        chart
            .configure_mesh()
            .x_desc("processes")
            .x_labels(x_labels)
            .x_label_formatter(&|x| format!("{x:.0}"))
            .draw()?;
        chart.draw_series(moved.iter().map(|&(x, y)| {
            Rectangle::new([(x - 0.15, 0.0), (x + 0.15, y)], GREEN.mix(0.7).filled())
        }))?;
        let label_at = top.max(1.0) * 0.09;
        chart.draw_series(moved.iter().map(|&(x, y)| {
            Text::new(
                format!("{y:.1} KiB"),
                (x - 0.12, y + label_at),
                ("sans-serif", 13),
            )
        }))?;
    }
    root.present()?;
    Ok(())
}

/// The most labels on the node axis.
const MAX_X_LABELS: usize = 64;

/// The top of `app`'s value axis over `points` with `headroom`: an error naming the value
/// when it cannot be drawn (a value so large the axis overflows to infinity would make the
/// plotting library loop over ticks forever).
fn axis_top<'a>(
    app: &str,
    what: &str,
    points: impl Iterator<Item = &'a (f64, f64)>,
    headroom: f64,
) -> anyhow::Result<f64> {
    let largest = points.map(|p| p.1).fold(0.0, f64::max);
    let top = largest * headroom;
    anyhow::ensure!(
        top.is_finite(),
        "{app}: {largest} {what} is too large to draw"
    );
    Ok(top)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(app: &str, nodes: usize, fusion: &str, seconds: f64, bytes: f64) -> Record {
        Record {
            app: app.into(),
            fusion: Some(fusion.into()),
            n: 10 * nodes,
            nodes,
            seconds_per_iter: seconds,
            bytes_moved_per_iter: bytes,
            ..Record::default()
        }
    }

    #[test]
    fn medians_table_and_figure_from_records() {
        let records = vec![
            record("cg", 1, "on", 0.010, 0.0),
            record("cg", 1, "on", 0.030, 0.0),
            record("cg", 1, "on", 0.020, 0.0),
            record("cg", 1, "off", 0.040, 0.0),
            record("cg", 2, "on", 0.025, 3200.0),
            record("cg", 2, "off", 0.050, 3300.0),
        ];
        let table = medians(&records).unwrap();
        let one = table[&("cg".to_string(), 1, "on".to_string())];
        assert_eq!((one.seconds, one.runs), (0.020, 3));
        let md = markdown(&table);
        assert!(
            md.contains("| cg | 1 | 10 | 20.00 | 40.00 | 2.00 | 1.00 | 0 | 4 |"),
            "{md}"
        );
        assert!(
            md.contains("| cg | 2 | 20 | 25.00 | 50.00 | 2.00 | 0.80 | 3200 | 2 |"),
            "{md}"
        );
        let svg = std::env::temp_dir().join(format!("weak-{}.svg", std::process::id()));
        figure(&table, &svg).unwrap();
        let text = std::fs::read_to_string(&svg).unwrap();
        let _ = std::fs::remove_file(&svg);
        assert!(text.contains("cg: ms per iteration") && text.contains("<polyline"));
    }

    #[test]
    fn a_line_that_is_not_a_record_names_its_place() {
        let path = std::env::temp_dir().join(format!("weak-bad-{}.jsonl", std::process::id()));
        std::fs::write(&path, "{\"app\": \"cg\"}\n").unwrap();
        let err = crate::records::read_records::<crate::records::Record>(&path).unwrap_err();
        let _ = std::fs::remove_file(&path);
        assert!(format!("{err:#}").contains(":1: not a record"), "{err:#}");
    }
}
