//! How `run` shows its progress on stderr (`--progress`): indicatif's bar on a terminal, or,
//! for nohup and Slurm logs, a plain line every [`LINE_EVERY`] and one at the end. The
//! pipeline advances one `ProgressBar` either way; in lines mode it is hidden and a thread reads
//! its position.

use std::io::IsTerminal;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::cli;
use crate::format::{clock, thousands};

/// Time between two progress lines.
pub const LINE_EVERY: Duration = Duration::from_secs(10);

/// The progress of one run: advance [`Progress::bar`]; dropping it stops the lines (printing
/// the last one).
pub struct Progress {
    bar: ProgressBar,
    lines: Option<Lines>,
}

/// The thread that prints the lines, and how to stop it.
struct Lines {
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

impl Progress {
    /// Progress over `total` configurations, shown as `mode` asks (`auto`: a bar when stderr is
    /// a terminal, lines otherwise).
    pub fn start(mode: cli::Progress, total: u64) -> Progress {
        let mode = match mode {
            cli::Progress::Auto if std::io::stderr().is_terminal() => cli::Progress::Bar,
            cli::Progress::Auto => cli::Progress::Lines,
            m => m,
        };
        match mode {
            cli::Progress::Bar => Progress {
                bar: bar(total),
                lines: None,
            },
            cli::Progress::Lines => {
                let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden());
                let stop = Arc::new((Mutex::new(false), Condvar::new()));
                let thread = {
                    let (bar, stop) = (bar.clone(), Arc::clone(&stop));
                    std::thread::spawn(move || print_lines(&bar, &stop))
                };
                Progress {
                    bar,
                    lines: Some(Lines {
                        stop,
                        thread: Some(thread),
                    }),
                }
            }
            cli::Progress::None | cli::Progress::Auto => Progress {
                bar: ProgressBar::hidden(),
                lines: None,
            },
        }
    }

    /// The counter the pipeline advances.
    pub fn bar(&self) -> &ProgressBar {
        &self.bar
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(lines) = &mut self.lines {
            let (stopped, wake) = &*lines.stop;
            *stopped.lock().unwrap_or_else(|e| e.into_inner()) = true;
            wake.notify_all();
            if let Some(t) = lines.thread.take() {
                let _ = t.join();
            }
        }
    }
}

/// A line every [`LINE_EVERY`] until stopped, then the last one.
#[expect(
    clippy::print_stderr,
    reason = "progress lines are for logs of runs without a terminal (nohup, Slurm)"
)]
fn print_lines(bar: &ProgressBar, stop: &(Mutex<bool>, Condvar)) {
    let start = Instant::now();
    let (mut last_done, mut last_at) = (0, start);
    let (stopped, wake) = stop;
    let mut guard = stopped.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let next = last_at + LINE_EVERY;
        while !*guard {
            let now = Instant::now();
            if now >= next {
                break;
            }
            guard = wake
                .wait_timeout(guard, next - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        let now = Instant::now();
        let done = bar.position();
        let total = bar.length().unwrap_or(done);
        if *guard {
            eprintln!("{}", last_line(done, total, (now - start).as_secs_f64()));
            return;
        }
        // The rate over the last interval: a resumed run's committed parts count at once.
        let rate = (done - last_done) as f64 / (now - last_at).as_secs_f64();
        eprintln!("{}", line(done, total, (now - start).as_secs_f64(), rate));
        (last_done, last_at) = (done, now);
    }
}

/// A line while running: done of total, the rate over the last interval and the time left at
/// that rate.
pub fn line(done: u64, total: u64, elapsed_s: f64, rate_per_s: f64) -> String {
    let eta = if rate_per_s > 0.0 {
        clock(total.saturating_sub(done) as f64 / rate_per_s)
    } else {
        "-".to_string()
    };
    format!(
        "progress: {} / {} configs ({:.1} %), {} configs/s, elapsed {}, ETA {eta}",
        thousands(done),
        thousands(total),
        percent(done, total),
        thousands(rate_per_s.round() as u64),
        clock(elapsed_s)
    )
}

/// The line at the end (also when a signal or an error stopped the run).
pub fn last_line(done: u64, total: u64, elapsed_s: f64) -> String {
    format!(
        "progress: {} / {} configs ({:.1} %) in {}",
        thousands(done),
        thousands(total),
        percent(done, total),
        clock(elapsed_s)
    )
}

fn percent(done: u64, total: u64) -> f64 {
    if total == 0 {
        100.0
    } else {
        done as f64 / total as f64 * 100.0
    }
}

fn bar(total: u64) -> ProgressBar {
    let bar = ProgressBar::new(total);
    let style = ProgressStyle::with_template(
        "{elapsed_precise} [{bar:40}] {human_pos}/{human_len} configs  {rate}  ETA {eta}",
    )
    .expect("valid template")
    .with_key(
        "rate",
        |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
            let _ = write!(w, "{} configs/s", thousands(state.per_sec() as u64));
        },
    )
    .progress_chars("=> ");
    bar.set_style(style);
    bar
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_says_done_total_rate_and_time_left() {
        // 2,500,000 of 10,000,000 at 1,250,000/s: 6 s left.
        assert_eq!(
            line(2_500_000, 10_000_000, 2.0, 1_250_000.0),
            "progress: 2,500,000 / 10,000,000 configs (25.0 %), 1,250,000 configs/s, elapsed 0:00:02, ETA 0:00:06"
        );
        assert_eq!(
            line(0, 10, 10.0, 0.0),
            "progress: 0 / 10 configs (0.0 %), 0 configs/s, elapsed 0:00:10, ETA -"
        );
        assert_eq!(
            last_line(840, 840, 0.4),
            "progress: 840 / 840 configs (100.0 %) in 0:00:00"
        );
        assert_eq!(
            last_line(0, 0, 0.0),
            "progress: 0 / 0 configs (100.0 %) in 0:00:00"
        );
    }
}
