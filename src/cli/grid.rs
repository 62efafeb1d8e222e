//! Rendering a placement: which (node, processor) each point of a task space runs on, as a
//! text grid, a JSON array, or an SVG picture (the Mapple paper's Figure 3).

use std::fmt::Write as _;

use serde::Serialize;

/// Where one point of a task space runs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Placed {
    /// The point.
    pub point: Vec<i64>,
    /// The node it runs on.
    pub node: usize,
    /// The processor's index within its node.
    pub processor: usize,
}

/// The placements as a grid: rows are the first coordinate, columns the second (1-d spaces
/// are one row; higher dimensions list one grid per leading index combination).
pub fn text(placed: &[Placed], ispace: &[i64]) -> String {
    let mut out = String::new();
    let cols = ispace.last().copied().unwrap_or(1).max(1) as usize;
    for (i, p) in placed.iter().enumerate() {
        if i > 0 && i % cols == 0 {
            out.push('\n');
        }
        if i % cols != 0 {
            out.push(' ');
        }
        let _ = write!(out, "({},{})", p.node, p.processor);
    }
    out.push('\n');
    out
}

/// A colour per (node, processor): nodes differ in hue, processors in lightness.
fn colour(p: &Placed, procs_per_node: usize) -> String {
    let hue = (p.node * 137) % 360;
    let light = 45 + (p.processor * 30 / procs_per_node.max(1));
    format!("hsl({hue},70%,{light}%)")
}

/// The placements of a 1-d or 2-d task space as an SVG grid of labelled cells.
pub fn svg(placed: &[Placed], ispace: &[i64], procs_per_node: usize) -> String {
    const CELL: usize = 48;
    let (rows, cols) = match ispace {
        [n] => (1, (*n).max(1) as usize),
        [r, c, ..] => ((*r).max(1) as usize, (*c).max(1) as usize),
        [] => (1, 1),
    };
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"monospace\" font-size=\"11\">\n",
        cols * CELL,
        rows * CELL
    );
    for (i, p) in placed.iter().take(rows * cols).enumerate() {
        let (x, y) = ((i % cols) * CELL, (i / cols) * CELL);
        let _ = writeln!(
            out,
            "  <rect x=\"{x}\" y=\"{y}\" width=\"{CELL}\" height=\"{CELL}\" fill=\"{}\" stroke=\"black\"/>\n  <text x=\"{}\" y=\"{}\" text-anchor=\"middle\">n{} p{}</text>",
            colour(p, procs_per_node),
            x + CELL / 2,
            y + CELL / 2 + 4,
            p.node,
            p.processor
        );
    }
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn placed(ispace: &[i64]) -> Vec<Placed> {
        let (r, c) = (ispace[0], ispace[1]);
        (0..r * c)
            .map(|k| Placed {
                point: vec![k / c, k % c],
                node: (k / c >= r / 2) as usize,
                processor: (k % c >= c / 2) as usize,
            })
            .collect()
    }

    #[test]
    fn text_grid_has_one_line_per_row() {
        let t = text(&placed(&[2, 3]), &[2, 3]);
        assert_eq!(t, "(0,0) (0,1) (0,1)\n(1,0) (1,1) (1,1)\n");
    }

    #[test]
    fn svg_has_a_labelled_cell_per_point() {
        let s = svg(&placed(&[6, 6]), &[6, 6], 2);
        assert_eq!(s.matches("<rect").count(), 36);
        assert!(s.contains(">n1 p1</text>"));
        assert!(s.starts_with("<svg") && s.ends_with("</svg>\n"));
    }
}
