//! proofscope, the viewer: sources (live socket, recording), the session model, analysis
//! (unaccounted gaps and their diagnoses, per-phase statistics), views and headless reports.
//!
//! The model has no ratatui import: views are pure functions of `(&Model, &ViewState)` and
//! headless reports read the same model.

pub mod analysis;
pub mod app;
pub mod capture;
pub mod child;
pub mod cli;
#[cfg(feature = "demo")]
pub mod demo;
pub mod diff;
pub mod exit;
pub mod export;
pub mod format;
pub mod hold;
pub mod import;
pub mod input;
pub mod model;
pub mod report;
pub mod run;
pub mod same_file;
pub mod signals;
pub mod source;
pub mod view;
pub mod warnings;
