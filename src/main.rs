mod catalog;
mod error;
mod grid;
mod perf;
mod suggest;
fn main() {}
