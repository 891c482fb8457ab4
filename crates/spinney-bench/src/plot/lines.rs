//! Line charts: the plan (drawable points only, ranges decided) and its
//! drawing, a line per series with markers when the points are few.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::frame::{draw_no_data, frame, series_colour, split_legend, y_label_area_px, Swatch};
use super::scale::{key_range, plottable, value_range, TickFormat};
use super::text::{draw_error, fit_text, text_style};
use super::{
    Chart, Series, AXIS_LABEL_FONT_SIZE, CHART_MARGIN_PX, GRID_BOLD, GRID_LIGHT, HEADROOM_LINES,
    LIGHT_LINES_MAX, MARKER_POINTS_MAX, TICKS_X_MAX, TICKS_Y_MAX, TICK_FONT_SIZE,
};

/// A line chart ready to draw: drawable points only, ranges decided.
pub(super) struct LinePlan {
    pub(super) title: String,
    pub(super) x_label: String,
    pub(super) y_label: String,
    pub(super) names: Vec<String>,
    pub(super) lines: Vec<Vec<(f64, f64)>>,
    pub(super) x_range: (f64, f64),
    pub(super) y_range: (f64, f64),
}

pub(super) fn plan_lines(title: &str, x_label: &str, y_label: &str, series: &[Series]) -> LinePlan {
    let lines: Vec<Vec<(f64, f64)>> = series
        .iter()
        .map(|s| {
            s.points
                .iter()
                .copied()
                .filter(|&(x, y)| plottable(x) && plottable(y))
                .collect()
        })
        .collect();
    let points = || lines.iter().flatten();
    LinePlan {
        title: title.to_string(),
        x_label: x_label.to_string(),
        y_label: y_label.to_string(),
        names: series.iter().map(|s| s.name.clone()).collect(),
        x_range: key_range(points().map(|p| p.0)),
        y_range: value_range(points().map(|p| p.1), HEADROOM_LINES),
        lines,
    }
}

impl Chart for LinePlan {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let body = frame(root, &self.title)?;
        let (plot, legend) = split_legend(&body, &self.names)?;
        let x_ticks = TickFormat::new(self.x_range, TICKS_X_MAX);
        let y_ticks = TickFormat::new(self.y_range, TICKS_Y_MAX);
        let (plot_width_px, plot_height_px) = plot.dim_in_pixel();
        let x_label_area_px = TICK_FONT_SIZE + AXIS_LABEL_FONT_SIZE + 28;
        let axis_style = text_style(AXIS_LABEL_FONT_SIZE);
        let x_label = fit_text(&plot, &self.x_label, &axis_style, plot_width_px)?;
        let y_label_px_max = plot_height_px.saturating_sub(x_label_area_px + 2 * CHART_MARGIN_PX);
        let y_label = fit_text(&plot, &self.y_label, &axis_style, y_label_px_max)?;
        let mut chart = ChartBuilder::on(&plot)
            .margin(CHART_MARGIN_PX)
            .x_label_area_size(x_label_area_px)
            .y_label_area_size(y_label_area_px(&plot, &y_ticks, self.y_range)?)
            .build_cartesian_2d(
                self.x_range.0..self.x_range.1,
                self.y_range.0..self.y_range.1,
            )
            .map_err(draw_error)?;
        let x_format = |v: &f64| x_ticks.format(*v);
        let y_format = |v: &f64| y_ticks.format(*v);
        chart
            .configure_mesh()
            .x_desc(x_label)
            .y_desc(y_label)
            .x_labels(TICKS_X_MAX)
            .y_labels(TICKS_Y_MAX)
            .x_label_formatter(&x_format)
            .y_label_formatter(&y_format)
            .label_style(text_style(TICK_FONT_SIZE))
            .axis_desc_style(axis_style)
            .bold_line_style(GRID_BOLD)
            .light_line_style(GRID_LIGHT)
            .max_light_lines(LIGHT_LINES_MAX)
            .draw()
            .map_err(draw_error)?;
        for (index, line) in self.lines.iter().enumerate() {
            let colour = series_colour(index);
            chart
                .draw_series(std::iter::once(PathElement::new(
                    line.clone(),
                    colour.stroke_width(2),
                )))
                .map_err(draw_error)?;
            if line.len() <= MARKER_POINTS_MAX {
                chart
                    .draw_series(line.iter().map(|&p| Circle::new(p, 3, colour.filled())))
                    .map_err(draw_error)?;
            }
        }
        if self.lines.iter().all(Vec::is_empty) {
            draw_no_data(&mut chart, self.x_range, self.y_range)?;
        }
        legend.draw(Swatch::Line)?;
        Ok(())
    }
}
