//! The progress bar on stderr (ops done, ops/sec, ETA), shown only when
//! stderr is a terminal; and the progress lines, which go above the bar when
//! there is one and to stderr when there is not.
//!
//! Thread-safety: `Progress` is used by the sampler thread only.

use std::io::IsTerminal;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};

/// A benchmark's progress display.
pub struct Progress {
    bar: Option<ProgressBar>,
    started: Instant,
}

impl Progress {
    /// No bar; progress lines go to stderr.
    pub fn hidden() -> Progress {
        Progress {
            bar: None,
            started: Instant::now(),
        }
    }

    /// A bar for the benchmark `name` if `wanted` and stderr is a terminal.
    /// With `expected_ops` the bar shows how far along the benchmark is and
    /// an ETA; without (a timed run), a counter and the rate.
    pub fn start(name: &str, wanted: bool, expected_ops: Option<u64>) -> Progress {
        if !wanted || !std::io::stderr().is_terminal() {
            return Progress::hidden();
        }
        let (bar, template) = match expected_ops {
            Some(total) => (
                ProgressBar::new(total),
                "{prefix:<16} [{bar:30}] {human_pos}/{human_len} {msg} ETA {eta}",
            ),
            None => (
                ProgressBar::new_spinner(),
                "{prefix:<16} {spinner} {human_pos} ops {msg} {elapsed}",
            ),
        };
        if let Ok(style) = ProgressStyle::with_template(template) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_prefix(name.to_string());
        Progress {
            bar: Some(bar),
            started: Instant::now(),
        }
    }

    /// Operations done so far.
    pub fn set(&self, ops: u64) {
        if let Some(bar) = &self.bar {
            bar.set_position(ops);
            // The mean rate, as a whole number (indicatif's {per_sec} shows
            // four decimals of a rate measured over its last few updates).
            let seconds = self.started.elapsed().as_secs_f64();
            if seconds > 0.0 {
                bar.set_message(format!("{:.0} ops/sec", ops as f64 / seconds));
            }
        }
    }

    /// Prints a line to stderr, above the bar if there is one.
    pub fn println(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.println(line),
            None => eprintln!("{line}"),
        }
    }

    /// Removes the bar.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
