//! The plot: fan-out throughput against listener count, the hub and both
//! anchors, as an SVG.

use std::path::Path;

use plotters::prelude::*;

/// Deliveries per second at one listener count: hub, broadcast, mpsc.
pub(crate) type CurvePoint = (usize, f64, f64, f64);

/// A plotted line: its label, colour, and which figure of a point it draws.
type Series = (&'static str, RGBColor, fn(&CurvePoint) -> f64);

/// Draws `points` to an SVG file at `path`.
pub(crate) fn plot(path: &Path, points: &[CurvePoint]) -> Result<(), Box<dyn std::error::Error>> {
    let root = SVGBackend::new(path, (800, 500)).into_drawing_area();
    root.fill(&WHITE)?;
    let max = points
        .iter()
        .map(|p| p.1.max(p.2).max(p.3))
        .fold(0.0, f64::max)
        / 1e6
        * 1.15;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "Fan-out: deliveries per second (millions)",
            ("sans-serif", 22),
        )
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(60)
        .build_cartesian_2d((16f64..4096f64).log_scale(), 0f64..max)?;
    chart
        .configure_mesh()
        .x_desc("listeners (log scale)")
        .y_desc("million deliveries / s")
        .draw()?;
    let series: [Series; 3] = [
        ("mcp-subscriptions hub", BLUE, |p| p.1),
        ("tokio::sync::broadcast", RED, |p| p.2),
        ("per-listener mpsc", GREEN, |p| p.3),
    ];
    for (name, color, value) in series {
        let line: Vec<(f64, f64)> = points
            .iter()
            .map(|p| (p.0 as f64, value(p) / 1e6))
            .collect();
        chart
            .draw_series(LineSeries::new(line.clone(), color.stroke_width(2)))?
            .label(name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        chart.draw_series(line.into_iter().map(|p| Circle::new(p, 4, color.filled())))?;
    }
    chart
        .configure_series_labels()
        .border_style(BLACK)
        .background_style(WHITE.mix(0.8))
        .draw()?;
    root.present()?;
    Ok(())
}
