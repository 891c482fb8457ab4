//! Grouped bar charts: the plan (groups and series in first-seen order, a
//! later bar replacing an earlier one of the same group and series) and
//! its drawing, each bar with its value written on top.

use std::collections::HashMap;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::frame::{draw_no_data, frame, series_colour, split_legend, y_label_area_px, Swatch};
use super::scale::{format_value, plottable, value_range, TickFormat};
use super::text::{draw_error, fit_text, text_style, text_width_px};
use super::{
    Bar, Chart, AXIS_LABEL_FONT_SIZE, BAR_FILL, BAR_GROUP_FILL, BAR_VALUE_FONT_SIZE,
    CHART_MARGIN_PX, GRID_BOLD, GRID_LIGHT, HEADROOM_BARS, LIGHT_LINES_MAX, TEXT_MUTED,
    TICKS_Y_MAX, TICK_FONT_SIZE,
};

/// A grouped bar chart ready to draw.
pub(super) struct BarPlan {
    pub(super) title: String,
    pub(super) y_label: String,
    pub(super) groups: Vec<String>,
    pub(super) series: Vec<String>,
    /// `values[group][series]`; None where no drawable value was given.
    pub(super) values: Vec<Vec<Option<f64>>>,
    pub(super) y_range: (f64, f64),
}

pub(super) fn plan_bars(title: &str, y_label: &str, bars: &[Bar]) -> BarPlan {
    let mut groups = Names::default();
    let mut series = Names::default();
    let mut cells: Vec<(usize, usize, Option<f64>)> = Vec::with_capacity(bars.len());
    for bar in bars {
        let group = groups.index_of(&bar.group);
        let series = series.index_of(&bar.series);
        cells.push((group, series, Some(bar.value).filter(|&v| plottable(v))));
    }
    let mut values = vec![vec![None; series.names.len()]; groups.names.len()];
    for (group, series, value) in cells {
        if let Some(cell) = values.get_mut(group).and_then(|row| row.get_mut(series)) {
            *cell = value;
        }
    }
    let y_range = value_range(values.iter().flatten().flatten().copied(), HEADROOM_BARS);
    BarPlan {
        title: title.to_string(),
        y_label: y_label.to_string(),
        groups: groups.names,
        series: series.names,
        values,
        y_range,
    }
}

/// Distinct names in first-seen order.
#[derive(Default)]
struct Names {
    pub(super) names: Vec<String>,
    pub(super) index: HashMap<String, usize>,
}

impl Names {
    /// The position of `name`, which is appended if it is new.
    fn index_of(&mut self, name: &str) -> usize {
        if let Some(&index) = self.index.get(name) {
            return index;
        }
        let index = self.names.len();
        self.names.push(name.to_string());
        self.index.insert(name.to_string(), index);
        index
    }
}

impl Chart for BarPlan {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let body = frame(root, &self.title)?;
        let (plot, legend) = split_legend(&body, &self.series)?;
        let y_ticks = TickFormat::new(self.y_range, TICKS_Y_MAX);
        let x_label_area_px = TICK_FONT_SIZE + 20;
        let axis_style = text_style(AXIS_LABEL_FONT_SIZE);
        let y_label_px_max = plot
            .dim_in_pixel()
            .1
            .saturating_sub(x_label_area_px + 2 * CHART_MARGIN_PX);
        let y_label = fit_text(&plot, &self.y_label, &axis_style, y_label_px_max)?;
        let group_count = self.groups.len().max(1) as f64;
        let mut chart = ChartBuilder::on(&plot)
            .margin(CHART_MARGIN_PX)
            .x_label_area_size(x_label_area_px)
            .y_label_area_size(y_label_area_px(&plot, &y_ticks, self.y_range)?)
            .build_cartesian_2d(0.0..group_count, self.y_range.0..self.y_range.1)
            .map_err(draw_error)?;
        let y_format = |v: &f64| y_ticks.format(*v);
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .y_desc(y_label)
            .y_labels(TICKS_Y_MAX)
            .y_label_formatter(&y_format)
            .label_style(text_style(TICK_FONT_SIZE))
            .axis_desc_style(axis_style)
            .bold_line_style(GRID_BOLD)
            .light_line_style(GRID_LIGHT)
            .max_light_lines(LIGHT_LINES_MAX)
            .draw()
            .map_err(draw_error)?;

        // Each group has a slot one unit wide; its bars share the middle of it.
        let series_count = self.series.len().max(1) as f64;
        let bar_slot = BAR_GROUP_FILL / series_count;
        let bar_x = |group: usize, series: usize| {
            let left = group as f64 + (1.0 - BAR_GROUP_FILL) / 2.0 + series as f64 * bar_slot;
            let inset = bar_slot * (1.0 - BAR_FILL) / 2.0;
            (left + inset, left + bar_slot - inset)
        };
        let bars = || {
            self.values.iter().enumerate().flat_map(|(group, row)| {
                row.iter()
                    .enumerate()
                    .filter_map(move |(series, value)| value.map(|v| (group, series, v)))
            })
        };
        chart
            .draw_series(bars().map(|(group, series, v)| {
                let (x0, x1) = bar_x(group, series);
                Rectangle::new([(x0, 0.0), (x1, v)], series_colour(series).filled())
            }))
            .map_err(draw_error)?;

        // Where things land, in pixels, taken before drawing borrows the chart.
        let pixel_x = |x: f64| chart.backend_coord(&(x, 0.0)).0;
        let bar_width_px = {
            let (x0, x1) = bar_x(0, 0);
            pixel_x(x1) - pixel_x(x0)
        };
        let slot_width_px = pixel_x(1.0) - pixel_x(0.0);
        let group_centres_px: Vec<i32> = (0..self.groups.len())
            .map(|group| pixel_x(group as f64 + 0.5))
            .collect();
        let axis_y_px = chart.backend_coord(&(0.0, self.y_range.0)).1;

        // Values are written on the bars only if every one fits its bar's width.
        let value_style = text_style(BAR_VALUE_FONT_SIZE).color(&TEXT_MUTED);
        let mut labels_fit = true;
        for (_, _, v) in bars() {
            let width_px = text_width_px(&plot, &format_value(v), &value_style)?;
            labels_fit &= i64::from(width_px) <= i64::from(bar_width_px) + 4;
        }
        if labels_fit {
            let above = value_style.pos(Pos::new(HPos::Center, VPos::Bottom));
            let below = value_style.pos(Pos::new(HPos::Center, VPos::Top));
            chart
                .draw_series(bars().map(|(group, series, v)| {
                    let (x0, x1) = bar_x(group, series);
                    let (offset_px, style) = if v >= 0.0 {
                        (-3, above.clone())
                    } else {
                        (3, below.clone())
                    };
                    EmptyElement::at(((x0 + x1) / 2.0, v))
                        + Text::new(format_value(v), (0, offset_px), style)
                }))
                .map_err(draw_error)?;
        }

        // Group names go under the axis, centred on their slots and cut to fit.
        let group_style = text_style(TICK_FONT_SIZE).pos(Pos::new(HPos::Center, VPos::Top));
        let name_width_px_max = u32::try_from(slot_width_px - 6).unwrap_or(0);
        for (name, &centre_px) in self.groups.iter().zip(&group_centres_px) {
            let name = fit_text(root, name, &group_style, name_width_px_max)?;
            root.draw_text(&name, &group_style, (centre_px, axis_y_px + 8))
                .map_err(draw_error)?;
        }

        if bars().next().is_none() {
            draw_no_data(&mut chart, (0.0, group_count), self.y_range)?;
        }
        legend.draw(Swatch::Block)?;
        Ok(())
    }
}
