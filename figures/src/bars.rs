//! Horizontal bar charts in panels: one panel per case (an app at a size), one labelled bar
//! per system or quantity, on a linear or logarithmic axis. Every figure of the peer report
//! is one of these, so they read alike.

use std::path::Path;

use anyhow::bail;
use plotters::coord::ranged1d::{AsRangedCoord, SegmentValue, ValueFormatter};
use plotters::prelude::*;

/// The value axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// From zero.
    Linear,
    /// Logarithmic (every value must be positive; others are left out of the panel).
    Log,
}

/// One bar.
#[derive(Debug, Clone)]
pub struct Bar {
    /// Its label on the category axis.
    pub label: String,
    /// Its length.
    pub value: f64,
    /// Its colour.
    pub color: RGBColor,
}

/// One panel: a titled group of bars sharing an axis.
#[derive(Debug, Clone)]
pub struct Panel {
    /// The panel's caption.
    pub title: String,
    /// Its bars, top to bottom.
    pub bars: Vec<Bar>,
}

/// How a chart of panels looks.
#[derive(Debug, Clone, Copy)]
pub struct Style<'a> {
    /// What the value axis measures (with its unit).
    pub axis: &'a str,
    /// The value axis.
    pub scale: Scale,
    /// Panels per row.
    pub columns: usize,
    /// A value marked by a vertical line in every panel (1 on a speedup axis).
    pub reference: Option<f64>,
}

const PANEL_WIDTH: u32 = 470;
const BAR_HEIGHT: u32 = 30;
const PANEL_CHROME: u32 = 95;

/// The value as the bar's text: three significant digits.
fn format_value(v: f64) -> String {
    let a = v.abs();
    if a >= 100.0 || a == 0.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// Labels on the value axis, at most (more crowd a panel's width).
const AXIS_LABELS: usize = 5;

/// A value-axis label: the value as short as it reads exactly (`10`, `0.5`, `2000`).
fn format_tick(v: f64) -> String {
    let text = format!("{v:.3}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Pixels left of a panel's axis for its bars' labels: room for the longest one, within
/// bounds that keep the bars most of the panel.
fn label_width(bars: &[&Bar]) -> u32 {
    let longest = bars
        .iter()
        .map(|b| b.label.chars().count())
        .max()
        .unwrap_or(0);
    (longest as u32 * 7 + 12).clamp(120, 190)
}

/// Draws `panels` into the SVG file `path`.
pub fn draw(path: &Path, style: &Style, panels: &[Panel]) -> anyhow::Result<()> {
    if panels.is_empty() {
        bail!("no data for {}", path.display());
    }
    let columns = style.columns.clamp(1, panels.len());
    let rows = panels.len().div_ceil(columns);
    let most_bars = panels.iter().map(|p| p.bars.len()).max().unwrap_or(1) as u32;
    let panel_height = PANEL_CHROME + BAR_HEIGHT * most_bars.max(1);
    let size = (PANEL_WIDTH * columns as u32, panel_height * rows as u32);
    let root = SVGBackend::new(path, size).into_drawing_area();
    root.fill(&WHITE)?;
    for (area, panel) in root.split_evenly((rows, columns)).iter().zip(panels) {
        draw_panel(area, style, panel)?;
    }
    root.present()?;
    Ok(())
}

/// Whether a bar of `value` can be drawn on `scale`: a finite value, positive on a log axis,
/// within 1e±300 (the room the axis leaves around larger values overflows, and around
/// smaller ones is subnormal, where plotters' ticks never end); others are left out.
fn drawable(value: f64, scale: Scale) -> bool {
    const LIMIT: f64 = 1e300;
    match scale {
        Scale::Linear => value.abs() <= LIMIT,
        Scale::Log => (1.0 / LIMIT..=LIMIT).contains(&value),
    }
}

fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    style: &Style,
    panel: &Panel,
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    let bars: Vec<&Bar> = panel
        .bars
        .iter()
        .filter(|b| drawable(b.value, style.scale))
        .collect();
    if bars.is_empty() {
        return Ok(());
    }
    let top = bars
        .iter()
        .map(|b| b.value)
        .chain(style.reference)
        .fold(f64::MIN, f64::max);
    let bottom = bars
        .iter()
        .map(|b| b.value)
        .chain(style.reference)
        .fold(f64::MAX, f64::min);
    let mut builder = ChartBuilder::on(area);
    builder
        .caption(&panel.title, ("sans-serif", 17))
        .margin(10)
        .x_label_area_size(38)
        .y_label_area_size(label_width(&bars));
    match style.scale {
        // Room for the value text right of the longest bar.
        Scale::Log => {
            let base = bottom / 2.0;
            let axis = (base..top * 6.0).log_scale();
            fill(builder, axis, base, |v| v * 1.08, style, &bars)
        }
        Scale::Linear => {
            let pad = top.max(0.0) * 0.02;
            let axis = 0.0..(top.max(0.0) * 1.3).max(1e-9);
            fill(builder, axis, 0.0, |v| v + pad, style, &bars)
        }
    }
}

/// Draws `bars` from `base` on the value axis `axis`, each with its value as text at
/// `text_at(value)`.
fn fill<DB, X>(
    mut builder: ChartBuilder<DB>,
    axis: X,
    base: f64,
    text_at: impl Fn(f64) -> f64,
    style: &Style,
    bars: &[&Bar],
) -> anyhow::Result<()>
where
    DB: DrawingBackend,
    DB::ErrorType: 'static,
    X: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
{
    // Bars run top to bottom in the panel's order.
    let slot = |i: usize| bars.len() - 1 - i;
    let labels_in_order: Vec<String> = (0..bars.len())
        .map(|y| bars[slot(y)].label.clone())
        .collect();
    let label_y = |v: &SegmentValue<usize>| match v {
        SegmentValue::CenterOf(y) => labels_in_order.get(*y).cloned().unwrap_or_default(),
        _ => String::new(),
    };
    // `a..b` segments into `a..=b`: one segment per bar (two for a lone bar: plotters cannot
    // segment the empty range `0..0`).
    let last = (bars.len() - 1).max(1);
    let mut chart = builder.build_cartesian_2d(axis, (0..last).into_segmented())?;
    chart
        .configure_mesh()
        .x_desc(style.axis)
        .x_labels(AXIS_LABELS)
        .x_label_formatter(&|v: &f64| format_tick(*v))
        // One faint line between labels (plotters 0.3 never returns with 0).
        .max_light_lines(1)
        .y_label_formatter(&label_y)
        .y_labels(bars.len())
        .disable_y_mesh()
        .draw()?;
    chart.draw_series(bars.iter().enumerate().map(|(i, b)| {
        let y = slot(i);
        let mut r = Rectangle::new(
            [
                (base, SegmentValue::Exact(y)),
                (b.value, SegmentValue::Exact(y + 1)),
            ],
            b.color.filled(),
        );
        r.set_margin(4, 4, 0, 0);
        r
    }))?;
    chart.draw_series(bars.iter().enumerate().map(|(i, b)| {
        Text::new(
            format_value(b.value),
            (text_at(b.value), SegmentValue::CenterOf(slot(i))),
            ("sans-serif", 13),
        )
    }))?;
    if let Some(at) = style.reference {
        chart.draw_series(std::iter::once(PathElement::new(
            vec![
                (at, SegmentValue::Exact(0)),
                (at, SegmentValue::Exact(bars.len())),
            ],
            BLACK.stroke_width(2),
        )))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panels_draw_their_labels_and_values_and_skip_what_a_log_axis_cannot_show() {
        let panels = vec![Panel {
            title: "stencil n=64".into(),
            bars: vec![
                Bar {
                    label: "numpy".into(),
                    value: 12.5,
                    color: RED,
                },
                Bar {
                    label: "diffuse-fused".into(),
                    value: 0.25,
                    color: BLUE,
                },
                Bar {
                    label: "broken".into(),
                    value: 0.0,
                    color: BLACK,
                },
            ],
        }];
        let path = std::env::temp_dir().join(format!("bars-{}.svg", std::process::id()));
        let style = Style {
            axis: "ms per iteration",
            scale: Scale::Log,
            columns: 3,
            reference: Some(1.0),
        };
        draw(&path, &style, &panels).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        for want in ["stencil n=64", "numpy", "diffuse-fused", "12.5", "0.250"] {
            assert!(text.contains(want), "{want} missing");
        }
        assert!(!text.contains("broken"));
        assert_eq!(format_value(1234.4), "1234");
        assert_eq!(format_value(4.56789), "4.57");
        assert_eq!(format_tick(100.0), "100");
        assert_eq!(format_tick(0.5), "0.5");
        assert_eq!(format_tick(2.25), "2.25");
    }

    #[test]
    fn values_an_axis_cannot_span_are_left_out() {
        for (value, linear, log) in [
            (1.0, true, true),
            (-2.0, true, false),
            (0.0, true, false),
            (1e300, true, true),
            (1e308, false, false),
            (1e-300, true, true),
            (1e-320, true, false),
            (f64::NAN, false, false),
            (f64::INFINITY, false, false),
        ] {
            assert_eq!(drawable(value, Scale::Linear), linear, "{value} linear");
            assert_eq!(drawable(value, Scale::Log), log, "{value} log");
        }
    }

    #[test]
    fn a_panel_of_one_bar_draws() {
        let panels = vec![Panel {
            title: "one".into(),
            bars: vec![Bar {
                label: "only".into(),
                value: 3.0,
                color: RED,
            }],
        }];
        let path = std::env::temp_dir().join(format!("bar-{}.svg", std::process::id()));
        for scale in [Scale::Log, Scale::Linear] {
            let style = Style {
                axis: "x",
                scale,
                columns: 1,
                reference: None,
            };
            draw(&path, &style, &panels).unwrap();
            let text = std::fs::read_to_string(&path).unwrap();
            assert!(text.contains("only") && text.contains("3.00"), "{scale:?}");
        }
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn no_panels_is_an_error_naming_the_figure() {
        let style = Style {
            axis: "x",
            scale: Scale::Linear,
            columns: 1,
            reference: None,
        };
        let err = draw(Path::new("/tmp/none.svg"), &style, &[]).unwrap_err();
        assert!(err.to_string().contains("/tmp/none.svg"));
    }
}
