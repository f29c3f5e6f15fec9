//! proofscope, the viewer: sources (live socket, recording), the session model, analysis
//! (unaccounted gaps and their diagnoses, per-phase statistics), views and headless reports.
//!
//! The model has no ratatui import: views are pure functions of `(&Model, &ViewState)` and
//! headless reports read the same model.

pub mod app;
pub mod child;
pub mod cli;
pub mod commands;
#[cfg(feature = "demo")]
pub mod demo;
pub mod exit;
pub mod input;
pub mod panel;
pub mod same_file;
pub mod view;
